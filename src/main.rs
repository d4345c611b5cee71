/// jemalloc instead of glibc's malloc for everything picket allocates (libhs and libpcre2
/// keep glibc's): measured on the reference run single-threaded with ET Open, packets/s went up
/// at the same peak RSS (README, "Per-core speed", #13 fourth step). Memory freed by rule
/// builds is handed back to the system from both (`heap::release_free_memory`).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() {
    std::process::exit(picket::cli::main());
}
