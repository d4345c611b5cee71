//! Safe wrapper over the few libhs calls the matcher needs. The only `unsafe` of the MPM lives
//! here; every block states why it is sound.
//!
//! Ownership: [`Database`] and [`HsScratch`] own their C allocations and free them on drop.
//! Hyperscan documents a compiled database as read-only and safe to share between threads, and
//! a scratch as usable by one thread at a time: hence `Database: Send + Sync`, `HsScratch: Send`
//! (and scans take `&mut HsScratch`, so two scans can never use one scratch at once).

#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CStr};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU64, Ordering};

use hyperscan_sys as sys;

/// One literal for [`Database::compile_literals`].
pub(super) struct Literal<'a> {
    pub bytes: &'a [u8],
    pub caseless: bool,
    pub id: u32,
}

/// A compiled block-mode database, with a serial that identifies it for the process's life
/// (a freed database's address can be reused; its serial never is), and the libhs entry
/// point that scans it (the one its platform was compiled for, see [`CodePath`]).
pub(super) struct Database(NonNull<sys::hs_database_t>, u64, ScanFn);

/// `hs_scan`'s signature, which libhs's per-CPU entry points (`avx2_hs_scan`, ...) share.
type ScanFn = unsafe extern "C" fn(
    *const sys::hs_database_t,
    *const c_char,
    c_uint,
    c_uint,
    *mut sys::hs_scratch_t,
    sys::match_event_handler,
    *mut c_void,
) -> sys::hs_error_t;

/// Source of database serials.
static NEXT_DATABASE: AtomicU64 = AtomicU64::new(1);

/// Most database serials one scratch remembers; beyond that the list restarts, and a database
/// forgotten that way is simply fitted again on its next scan (no reallocation when it fits).
const MAX_FITTED: usize = 4096;

/// Why a literal set did not compile, and which literal (index into the slice) if libhs says.
#[derive(Debug)]
pub(super) struct CompileError {
    pub message: String,
    pub literal: Option<usize>,
}

// SAFETY: libhs never mutates a database after compilation; concurrent scans of one database
// with distinct scratches are the documented way to use it from several threads.
unsafe impl Send for Database {}
// SAFETY: as above, all access through `&Database` is read-only in libhs.
unsafe impl Sync for Database {}

/// Scratch space, and the serials of the databases it was sized for with
/// [`HsScratch::fit`]: [`Database::scan`] fits the scratch before every scan, since
/// libhs cannot always tell and would read or write past an undersized scratch.
pub(super) struct HsScratch(NonNull<sys::hs_scratch_t>, Fitted);

/// Slots of [`Fitted`]'s direct-mapped table: more than the databases one engine compiles
/// (60 with ET Open), whose serials are consecutive, so each has a slot of its own.
const FITTED_SLOTS: usize = 256;

/// The serials of the databases a scratch fits: all of them sorted, and a direct-mapped table
/// (slot = serial modulo its size) in front, so that the check before each scan is one load
/// and compare instead of a binary search. Serials start at 1; 0 marks an empty slot.
struct Fitted {
    sorted: Vec<u64>,
    slots: Box<[u64; FITTED_SLOTS]>,
}

impl Default for Fitted {
    fn default() -> Self {
        Fitted { sorted: Vec::new(), slots: Box::new([0; FITTED_SLOTS]) }
    }
}

impl Fitted {
    fn slot(serial: u64) -> usize {
        (serial % FITTED_SLOTS as u64) as usize
    }

    #[inline]
    fn contains(&self, serial: u64) -> bool {
        (serial != 0 && self.slots[Self::slot(serial)] == serial) || self.sorted.binary_search(&serial).is_ok()
    }

    fn insert(&mut self, serial: u64) {
        if self.sorted.len() >= MAX_FITTED {
            self.clear();
        }
        if let Err(at) = self.sorted.binary_search(&serial) {
            self.sorted.insert(at, serial);
        }
        self.slots[Self::slot(serial)] = serial;
    }

    fn clear(&mut self) {
        self.sorted.clear();
        self.slots.fill(0);
    }
}

// SAFETY: a scratch is not tied to the thread that allocated it; libhs only forbids concurrent
// use, which `&mut HsScratch` in `Database::scan` rules out.
unsafe impl Send for HsScratch {}

/// Whether this CPU can run Hyperscan (SSSE3 at least).
pub(super) fn platform_supported() -> bool {
    // SAFETY: takes no arguments and only inspects CPU features.
    unsafe { sys::hs_valid_platform() == sys::HS_SUCCESS as c_int }
}

/// libhs's version string and the platform (tuning and CPU features) databases are compiled
/// for on `path`, which a serialized database depends on: part of the on-disk cache's key.
pub(super) fn version_and_platform(path: CodePath) -> String {
    // SAFETY: `hs_version` returns a pointer to a static NUL-terminated string (or null).
    let version = unsafe {
        let v = sys::hs_version();
        if v.is_null() {
            String::new()
        } else {
            CStr::from_ptr(v).to_string_lossy().into_owned()
        }
    };
    let platform =
        platform_for(path).unwrap_or(sys::hs_platform_info { tune: 0, cpu_features: 0, reserved1: 0, reserved2: 0 });
    format!("{version}; tune {}; features {:#x}", platform.tune, platform.cpu_features)
}

/// This host's platform as libhs describes it, without the AVX-512 features on
/// [`CodePath::Avx2`] (libhs's AVX2 entry point refuses a database compiled for them).
/// `None` if libhs cannot describe the host.
fn platform_for(path: CodePath) -> Option<sys::hs_platform_info> {
    let mut platform = sys::hs_platform_info { tune: 0, cpu_features: 0, reserved1: 0, reserved2: 0 };
    // SAFETY: `platform` is a valid, writable platform record.
    let code = unsafe { sys::hs_populate_platform(&mut platform) };
    if code != sys::HS_SUCCESS as c_int {
        return None;
    }
    if path == CodePath::Avx2 {
        platform.cpu_features &= !u64::from(sys::HS_CPU_FEATURES_AVX512 | sys::HS_CPU_FEATURES_AVX512VBMI);
    }
    Some(platform)
}

/// Which of libhs's scan code paths scans a database. Debian's libhs is built with one code
/// path per instruction set (core2, corei7, AVX2, AVX-512, AVX-512 VBMI) and `hs_scan` jumps to
/// the newest this CPU has. On a CPU with AVX-512 that path lowers the core's clock for as long
/// as AVX-512 instructions keep running (every packet, here), which slows every other stage of
/// the packet path too, while its scans of literal sets are no faster than the AVX2 path's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CodePath {
    /// `hs_scan`: libhs's own pick for this CPU.
    #[default]
    Native,
    /// libhs's AVX2 entry point (`avx2_hs_scan`), with databases compiled without the AVX-512
    /// features.
    Avx2,
}

impl CodePath {
    /// [`CodePath::Avx2`] unless `allow_avx512`, when this CPU has AVX-512 (so `hs_scan` would
    /// take that path) and the AVX2 entry point is there; [`CodePath::Native`] otherwise: a
    /// CPU without AVX-512 gets the same code from `hs_scan`, and a libhs built for one
    /// instruction set only has no per-CPU entry points.
    pub fn choose(allow_avx512: bool) -> CodePath {
        if !allow_avx512 && cpu_has_avx512() && avx2_entry_point().is_some() {
            CodePath::Avx2
        } else {
            CodePath::Native
        }
    }

    /// The name used in logs and tests: `native` or `avx2`.
    pub fn name(self) -> &'static str {
        match self {
            CodePath::Native => "native",
            CodePath::Avx2 => "avx2",
        }
    }

    fn scan_fn(self) -> ScanFn {
        match (self, avx2_entry_point()) {
            (CodePath::Avx2, Some(avx2)) => avx2,
            _ => sys::hs_scan,
        }
    }
}

/// Whether libhs's dispatcher would pick one of its AVX-512 paths on this CPU (the AVX2 path's
/// own needs, AVX2 and BMI2, come with every AVX-512 CPU; checked all the same).
fn cpu_has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("bmi2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// libhs's AVX2 entry point, `avx2_hs_scan`, looked up once in the loaded libhs: exported by a
/// libhs built with a per-CPU dispatcher (Debian's), absent from one built for a single
/// instruction set.
fn avx2_entry_point() -> Option<ScanFn> {
    static ENTRY: std::sync::OnceLock<Option<ScanFn>> = std::sync::OnceLock::new();
    *ENTRY.get_or_init(|| {
        // SAFETY: `dlsym` with RTLD_DEFAULT searches the objects already loaded (libhs is linked
        // into the binary) for a NUL-terminated name; it only reads the name.
        let address = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"avx2_hs_scan".as_ptr()) };
        if address.is_null() {
            return None;
        }
        // SAFETY: `avx2_hs_scan` is libhs's AVX2 build of `hs_scan`, with `hs_scan`'s exact
        // signature (its dispatcher resolves `hs_scan` to it on AVX2 CPUs); a non-null address
        // of that symbol is that function.
        Some(unsafe { std::mem::transmute::<*mut c_void, ScanFn>(address) })
    })
}

fn error_name(code: c_int) -> &'static str {
    match code {
        sys::HS_INVALID => "invalid parameter",
        sys::HS_NOMEM => "out of memory",
        sys::HS_SCAN_TERMINATED => "scan terminated",
        sys::HS_COMPILER_ERROR => "compiler error",
        sys::HS_DB_VERSION_ERROR => "database built for another Hyperscan version",
        sys::HS_DB_PLATFORM_ERROR => "database built for another platform",
        sys::HS_DB_MODE_ERROR => "database built for another mode",
        sys::HS_BAD_ALIGN => "misaligned parameter",
        sys::HS_BAD_ALLOC => "allocator returned misaligned memory",
        sys::HS_SCRATCH_IN_USE => "scratch already in use",
        sys::HS_ARCH_ERROR => "unsupported CPU",
        sys::HS_INSUFFICIENT_SPACE => "buffer too small",
        _ => "unknown error",
    }
}

impl Database {
    /// Takes ownership of a database libhs just allocated, compiled for `path`.
    fn owned(database: NonNull<sys::hs_database_t>, path: CodePath) -> Database {
        Database(database, NEXT_DATABASE.fetch_add(1, Ordering::Relaxed), path.scan_fn())
    }

    /// Compiles `literals` with `hs_compile_lit_multi`, each reporting its `id` at most once per
    /// scan (`HS_FLAG_SINGLEMATCH`). Literal mode takes raw bytes (NUL included) and compiles
    /// short literals far faster than equivalent regexes.
    pub(super) fn compile_literals(literals: &[Literal<'_>], path: CodePath) -> Result<Database, CompileError> {
        let plain = |message: &str| CompileError { message: message.to_string(), literal: None };
        let count = c_uint::try_from(literals.len()).map_err(|_| plain("too many patterns"))?;
        if let Some(empty) = literals.iter().position(|literal| literal.bytes.is_empty()) {
            return Err(CompileError { message: "empty literal".into(), literal: Some(empty) });
        }
        let pointers: Vec<*const c_char> = literals.iter().map(|l| l.bytes.as_ptr().cast()).collect();
        let lengths: Vec<usize> = literals.iter().map(|l| l.bytes.len()).collect();
        let ids: Vec<c_uint> = literals.iter().map(|l| l.id).collect();
        let flags: Vec<c_uint> = literals
            .iter()
            .map(|l| sys::HS_FLAG_SINGLEMATCH | if l.caseless { sys::HS_FLAG_CASELESS } else { 0 })
            .collect();
        // `Native` compiles for this host (a null platform); `Avx2` for this host without the
        // AVX-512 features.
        let platform = match path {
            CodePath::Native => None,
            CodePath::Avx2 => Some(platform_for(path).ok_or_else(|| plain("hs_populate_platform failed"))?),
        };
        let mut database: *mut sys::hs_database_t = ptr::null_mut();
        let mut compile_error: *mut sys::hs_compile_error_t = ptr::null_mut();
        // SAFETY: the four arrays each hold `count` elements and outlive the call; every
        // pointer/length pair describes a live byte slice (literal mode reads exactly `len`
        // bytes, no NUL terminator). The platform is null ("this host") or a record that
        // outlives the call. The out-pointers are valid locals.
        let code = unsafe {
            sys::hs_compile_lit_multi(
                pointers.as_ptr(),
                flags.as_ptr(),
                ids.as_ptr(),
                lengths.as_ptr(),
                count,
                sys::HS_MODE_BLOCK,
                platform.as_ref().map_or(ptr::null(), |p| p as *const sys::hs_platform_info),
                &mut database,
                &mut compile_error,
            )
        };
        return_compiler_memory();
        if code == sys::HS_SUCCESS as c_int {
            return NonNull::new(database)
                .map(|db| Database::owned(db, path))
                .ok_or_else(|| plain("hs_compile_lit_multi returned no database"));
        }
        Err(take_compile_error(code, compile_error))
    }

    /// The database as bytes (`hs_serialize_database`), for the on-disk cache: the bytes
    /// name the Hyperscan version and platform they were built for, and
    /// [`Database::deserialize`] refuses them elsewhere.
    pub(super) fn serialize(&self) -> Result<Vec<u8>, &'static str> {
        let mut bytes: *mut c_char = ptr::null_mut();
        let mut length = 0usize;
        // SAFETY: `self.0` is a live database; both out-pointers are valid locals.
        let code = unsafe { sys::hs_serialize_database(self.0.as_ptr(), &mut bytes, &mut length) };
        if code != sys::HS_SUCCESS as c_int {
            return Err(error_name(code));
        }
        if bytes.is_null() {
            return Err("hs_serialize_database returned no bytes");
        }
        // SAFETY: on success libhs hands us `length` initialised bytes at `bytes`, allocated with
        // its default allocator (malloc, as picket never sets another); we copy them and free
        // the buffer exactly once.
        unsafe {
            let copy = std::slice::from_raw_parts(bytes.cast::<u8>(), length).to_vec();
            libc::free(bytes.cast());
            Ok(copy)
        }
    }

    /// A database from bytes made by [`Database::serialize`]. Bytes from another Hyperscan
    /// version or a platform this CPU cannot run, or damaged ones, are an error (libhs checks
    /// the header, version, platform and the bytecode's CRC).
    ///
    /// `path` must be the one the bytes were compiled for (the cache keys files by it).
    pub(super) fn deserialize(bytes: &[u8], path: CodePath) -> Result<Database, &'static str> {
        let mut database: *mut sys::hs_database_t = ptr::null_mut();
        // SAFETY: `bytes` is a live slice of `bytes.len()` bytes; libhs only reads it and
        // validates it before use. The out-pointer is a valid local.
        let code = unsafe { sys::hs_deserialize_database(bytes.as_ptr().cast(), bytes.len(), &mut database) };
        if code != sys::HS_SUCCESS as c_int {
            return Err(error_name(code));
        }
        NonNull::new(database).map(|db| Database::owned(db, path)).ok_or("hs_deserialize_database returned no database")
    }

    /// libhs's description of the database: version, the CPU features it was compiled for
    /// (`Features: AVX2 AVX512 ...`) and mode.
    #[cfg(test)]
    pub(super) fn info(&self) -> String {
        let mut info: *mut c_char = ptr::null_mut();
        // SAFETY: `self.0` is a live database; `info` is a valid out-pointer.
        let code = unsafe { sys::hs_database_info(self.0.as_ptr(), &mut info) };
        if code != sys::HS_SUCCESS as c_int || info.is_null() {
            return String::new();
        }
        // SAFETY: on success libhs hands us a NUL-terminated string allocated with malloc (its
        // default misc allocator); we copy it and free it exactly once.
        unsafe {
            let text = CStr::from_ptr(info).to_string_lossy().into_owned();
            libc::free(info.cast());
            text
        }
    }

    /// Whether scans of this database go through `entry`.
    #[cfg(test)]
    fn scans_with(&self, entry: ScanFn) -> bool {
        self.2 as usize == entry as usize
    }

    /// Bytes of the compiled database.
    pub(super) fn size(&self) -> usize {
        let mut size = 0usize;
        // SAFETY: `self.0` is a live database; `size` is a valid out-pointer.
        let code = unsafe { sys::hs_database_size(self.0.as_ptr(), &mut size) };
        if code == sys::HS_SUCCESS as c_int {
            size
        } else {
            0
        }
    }

    /// Scans `data` (at most `u32::MAX` bytes) with the scratch in `slot`, first sized for this
    /// database by [`HsScratch::fit`] (a no-op once it fits), calling `on_match(id)` for each
    /// report. A panic in `on_match` stops the scan and is resumed here, never unwinding
    /// through C.
    ///
    /// Taking the slot rather than a scratch makes the size check the one `fit` does: a
    /// separate check here searched the scratch's serials a second time on every scan (ref100k:
    /// 187k scans, 0.5% of the packet phase).
    pub(super) fn scan<F: FnMut(u32)>(
        &self,
        data: &[u8],
        slot: &mut Option<HsScratch>,
        on_match: F,
    ) -> Result<(), &'static str> {
        HsScratch::fit(slot, self)?;
        let scratch = slot.as_mut().ok_or("scratch missing after preparation")?;
        let length = c_uint::try_from(data.len()).map_err(|_| "haystack longer than 4 GiB")?;
        let mut context = ScanContext { on_match, panic: None };
        // SAFETY: database and scratch are live, and the scratch was sized for this database by
        // `HsScratch::fit` just above (it returns Ok only when the scratch's serials hold this
        // database's or libhs sized it for it: libhs may not detect an undersized scratch). `data` is valid
        // for `length` bytes. `context` outlives the call and is only touched by
        // `on_event::<F>`, which is instantiated with the same `F`. `self.2` is `hs_scan` or
        // the libhs entry point of the platform this database was compiled for.
        let code = unsafe {
            (self.2)(
                self.0.as_ptr(),
                data.as_ptr().cast(),
                length,
                0,
                scratch.0.as_ptr(),
                Some(on_event::<F>),
                (&mut context as *mut ScanContext<F>).cast(),
            )
        };
        if let Some(payload) = context.panic {
            resume_unwind(payload);
        }
        if code == sys::HS_SUCCESS as c_int {
            Ok(())
        } else {
            Err(error_name(code))
        }
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        // SAFETY: we own the database and nothing can use it after drop.
        unsafe {
            sys::hs_free_database(self.0.as_ptr());
        }
    }
}

struct ScanContext<F> {
    on_match: F,
    panic: Option<Box<dyn std::any::Any + Send>>,
}

/// libhs match callback: forwards the id; returning non-zero stops the scan.
unsafe extern "C" fn on_event<F: FnMut(u32)>(
    id: c_uint,
    _from: c_ulonglong,
    _to: c_ulonglong,
    _flags: c_uint,
    context: *mut c_void,
) -> c_int {
    // SAFETY: `context` is the `&mut ScanContext<F>` passed to `hs_scan` in `Database::scan`,
    // which is alive and not otherwise borrowed while libhs runs.
    let context = unsafe { &mut *context.cast::<ScanContext<F>>() };
    match catch_unwind(AssertUnwindSafe(|| (context.on_match)(id))) {
        Ok(()) => 0,
        Err(payload) => {
            context.panic = Some(payload);
            1
        }
    }
}

/// Hands the memory libhs's compiler freed back to the system. The compiler works in glibc's
/// heap (picket's own allocator is jemalloc, libhs keeps malloc) and frees its graphs before
/// it returns, but glibc keeps freed pages, and each compiling thread has an arena of its own:
/// without this, every arena kept the high-water mark of the largest set it had compiled
/// (ET Open: 37 MiB for one set) for the rest of the run, and the reference run with nothing
/// cached peaked 80 MiB above the same run with a warm cache.
fn return_compiler_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointer and walks glibc's arenas under their own locks;
    // any thread may call it at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Turns a failed compile into a message and frees libhs's error record.
fn take_compile_error(code: c_int, compile_error: *mut sys::hs_compile_error_t) -> CompileError {
    if compile_error.is_null() {
        return CompileError { message: error_name(code).to_string(), literal: None };
    }
    // SAFETY: on failure libhs hands us a valid error record whose `message` is a
    // NUL-terminated string (or null); we copy it before freeing the record exactly once.
    unsafe {
        let record = &*compile_error;
        let message = if record.message.is_null() {
            error_name(code).to_string()
        } else {
            CStr::from_ptr(record.message).to_string_lossy().into_owned()
        };
        let expression = record.expression;
        sys::hs_free_compile_error(compile_error);
        CompileError { message, literal: usize::try_from(expression).ok() }
    }
}

impl HsScratch {
    /// Makes `slot` hold a scratch that fits `database` as well as every database it fitted
    /// before, allocating or growing as needed.
    pub(super) fn fit(slot: &mut Option<HsScratch>, database: &Database) -> Result<(), &'static str> {
        // Hand ownership to libhs for the call: on a failed resize it frees the old scratch and
        // returns null, so `slot` must be refilled from whatever comes back.
        if slot.as_ref().is_some_and(|s| s.fits(database)) {
            return Ok(());
        }
        let (mut raw, mut fitted) = match slot.take() {
            Some(owned) => {
                let mut owned = std::mem::ManuallyDrop::new(owned);
                (owned.0.as_ptr(), std::mem::take(&mut owned.1))
            }
            None => (ptr::null_mut(), Fitted::default()),
        };
        // SAFETY: live database; `raw` is null (fresh allocation) or our scratch, which nobody
        // else can be using since we own it. Afterwards `raw` is null or a live scratch we own.
        let code = unsafe { sys::hs_alloc_scratch(database.0.as_ptr(), &mut raw) };
        let ok = code == sys::HS_SUCCESS as c_int;
        if ok {
            fitted.insert(database.1);
        } else {
            // A failed resize may have freed the scratch: no database is known to fit it.
            fitted.clear();
        }
        *slot = NonNull::new(raw).map(|raw| HsScratch(raw, fitted));
        match (ok, slot.is_some()) {
            (true, true) => Ok(()),
            (true, false) => Err("hs_alloc_scratch returned no scratch"),
            (false, _) => Err(error_name(code)),
        }
    }

    /// Whether this scratch was sized for `database`.
    pub(super) fn fits(&self, database: &Database) -> bool {
        self.1.contains(database.1)
    }

    /// Bytes of the scratch.
    pub(super) fn size(&self) -> usize {
        let mut size = 0usize;
        // SAFETY: live scratch; valid out-pointer.
        let code = unsafe { sys::hs_scratch_size(self.0.as_ptr(), &mut size) };
        if code == sys::HS_SUCCESS as c_int {
            size
        } else {
            0
        }
    }
}

impl Drop for HsScratch {
    fn drop(&mut self) {
        // SAFETY: we own the scratch; it cannot be in use during drop.
        unsafe {
            sys::hs_free_scratch(self.0.as_ptr());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn literals<'a>(words: &[&'a [u8]]) -> Vec<Literal<'a>> {
        words.iter().enumerate().map(|(i, w)| Literal { bytes: w, caseless: i % 2 == 1, id: i as u32 }).collect()
    }

    fn scan_ids(database: &Database, data: &[u8]) -> Vec<u32> {
        let mut scratch = None;
        let mut ids = Vec::new();
        database.scan(data, &mut scratch, |id| ids.push(id)).expect("scan");
        ids.sort_unstable();
        ids
    }

    /// On a CPU with AVX-512 and a libhs with per-CPU entry points (Debian's, on this
    /// project's machines) the AVX2 path is what `choose(false)` gives: its databases carry no
    /// AVX-512 feature and are scanned by `avx2_hs_scan`. Elsewhere both paths are libhs's own.
    #[test]
    fn avx2_path_compiles_without_avx512_and_scans_through_the_avx2_entry_point() {
        let words: [&[u8]; 4] = [b"GET ", b"user-agent", b"evil", b"absent"];
        let haystack = b"GET / HTTP/1.1\r\nUser-Agent: x\r\n\r\nevil";
        let native = Database::compile_literals(&literals(&words), CodePath::Native).expect("native");
        let avx2 = Database::compile_literals(&literals(&words), CodePath::Avx2).expect("avx2");
        assert!(!avx2.info().contains("AVX512"), "{}", avx2.info());
        assert!(native.scans_with(sys::hs_scan));
        assert_eq!(scan_ids(&avx2, haystack), vec![0, 1, 2]);
        assert_eq!(scan_ids(&native, haystack), scan_ids(&avx2, haystack));
        // Serialized and read back for the same path: the same entry point and answers.
        let again = Database::deserialize(&avx2.serialize().expect("serialize"), CodePath::Avx2).expect("load");
        assert_eq!(scan_ids(&again, haystack), vec![0, 1, 2]);
        match (cpu_has_avx512(), avx2_entry_point()) {
            (true, Some(entry)) => {
                assert_eq!(CodePath::choose(false), CodePath::Avx2);
                assert!(native.info().contains("AVX512"), "{}", native.info());
                assert!(avx2.scans_with(entry) && again.scans_with(entry));
                assert_ne!(version_and_platform(CodePath::Native), version_and_platform(CodePath::Avx2));
            }
            _ => assert_eq!(CodePath::choose(false), CodePath::Native),
        }
        assert_eq!(CodePath::choose(true), CodePath::Native);
    }

    #[test]
    fn fitted_knows_exactly_the_serials_it_was_given_also_when_they_share_a_slot() {
        let mut fitted = Fitted::default();
        let (a, b) = (1, 1 + FITTED_SLOTS as u64);
        assert!(!fitted.contains(a) && !fitted.contains(0));
        fitted.insert(a);
        assert!(fitted.contains(a) && !fitted.contains(b));
        // `b` takes `a`'s slot; `a` is still known, from the sorted list.
        fitted.insert(b);
        assert!(fitted.contains(a) && fitted.contains(b));
        assert!(!fitted.contains(2) && !fitted.contains(b + 1));
        fitted.clear();
        assert!(!fitted.contains(a) && !fitted.contains(b));
    }

    #[test]
    fn fitted_restarts_past_its_limit_and_keeps_the_newest() {
        let mut fitted = Fitted::default();
        for serial in 1..=MAX_FITTED as u64 {
            fitted.insert(serial);
        }
        assert!(fitted.contains(1) && fitted.contains(MAX_FITTED as u64));
        let newest = MAX_FITTED as u64 + 1;
        fitted.insert(newest);
        assert!(fitted.contains(newest));
        assert!(!fitted.contains(1), "forgotten serials are fitted again on their next scan");
        assert_eq!(fitted.sorted.len(), 1);
    }
}
