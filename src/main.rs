/// jemalloc instead of glibc's malloc for everything picket allocates (libhs and libpcre2
/// keep glibc's): measured on the reference run single-threaded with ET Open, packets/s went up
/// at the same peak RSS (README, "Per-core speed", #13 fourth step). Memory freed by rule
/// builds is handed back to the system from both (`heap::release_free_memory`).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's built-in options (its `malloc_conf`, read once when it starts; the
/// `_RJEM_MALLOC_CONF` environment variable overrides them, `thp:default` leaves huge pages
/// to the kernel's setting). `thp:always` asks the kernel for transparent huge pages for
/// jemalloc's heap (`madvise(MADV_HUGEPAGE)`), which Debian's default THP mode (`madvise`)
/// grants only to memory that asks. Flow, stream and app-layer state are reached at random
/// per packet, and with 4 KiB pages their address translations miss the TLB: the packet
/// phase gained about 5% for 27 MiB more peak RSS (README, "Per-core speed", #13 eleventh
/// step). `--build-info` shows the mode in effect.
#[export_name = "_rjem_malloc_conf"]
static JEMALLOC_CONF: &[u8; 11] = b"thp:always\0";

fn main() {
    std::process::exit(picket::cli::main());
}
