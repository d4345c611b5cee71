//! Handing freed heap back to the system. Rule builds (start-up and every reload) free far
//! more than they keep, and libhs's compiler leaves its working memory in glibc's heap;
//! both allocators keep freed pages unless told: jemalloc, which the `picket` binary
//! allocates with (src/main.rs), until its decay timer runs out, and glibc's malloc, which
//! libhs (Hyperscan databases, scratch, compiler) and libpcre2 use.

/// Hands what both allocators hold freed back to the system: after a rule build, and before
/// the pattern sets of one are compiled.
pub fn release_free_memory() {
    // A failed purge only leaves memory with jemalloc until its decay timer returns it.
    let _ = sys::purge_jemalloc();
    sys::trim_glibc();
}

/// jemalloc's transparent huge page mode (`opt.thp`: `always`, `never`, `default`, or `not
/// supported` when the kernel has no THP), as the `picket` binary's options and the
/// environment left it; `None` if jemalloc does not answer.
pub fn jemalloc_thp_mode() -> Option<String> {
    sys::jemalloc_opt_str(b"opt.thp\0")
}

/// Keeps this process's memory in 4 KiB pages from now on (`prctl(PR_SET_THP_DISABLE)`),
/// whatever the allocator asks for. For the commands that load rules and exit (`-T`,
/// `picket rules check`): huge pages pay off on the packet path only, and a start-up's
/// half-used huge pages added 13-15 MiB to its peak. Returns whether the kernel agreed.
pub fn without_huge_pages() -> bool {
    sys::disable_thp()
}

/// Returning freed heap to the system (jemalloc's `arena.<all>.purge`, glibc's `malloc_trim`),
/// and reading jemalloc's options.
#[allow(unsafe_code)]
mod sys {
    /// A string-valued jemalloc option (`name` a NUL-terminated mallctl name of type
    /// `const char *`).
    pub fn jemalloc_opt_str(name: &[u8]) -> Option<String> {
        debug_assert_eq!(name.last(), Some(&0));
        let mut value: *const std::ffi::c_char = std::ptr::null();
        let mut len = std::mem::size_of::<*const std::ffi::c_char>();
        // SAFETY: `name` is NUL-terminated; the old value is written to `value`, whose size
        // `len` is that of the `const char *` the option holds; no new value is given.
        let rc = unsafe {
            tikv_jemalloc_sys::mallctl(
                name.as_ptr().cast(),
                (&mut value as *mut *const std::ffi::c_char).cast(),
                &mut len,
                std::ptr::null_mut(),
                0,
            )
        };
        if rc != 0 || value.is_null() {
            return None;
        }
        // SAFETY: jemalloc's option strings are NUL-terminated static strings.
        let text = unsafe { std::ffi::CStr::from_ptr(value) };
        Some(text.to_string_lossy().into_owned())
    }

    /// jemalloc's `MALLCTL_ARENAS_ALL`: the arena index that names every arena.
    const PURGE_ALL_ARENAS: &[u8] = b"arena.4096.purge\0";

    /// Returns mallctl's result: 0, or an errno (`ENOENT` for a name jemalloc does not know).
    pub fn purge_jemalloc() -> i32 {
        // SAFETY: the name is a NUL-terminated mallctl name; a purge reads no old value and
        // takes no new one (null pointers, length 0, as jemalloc's manual says for this
        // name). It runs under jemalloc's own locks and may be called from any thread.
        unsafe {
            tikv_jemalloc_sys::mallctl(
                PURGE_ALL_ARENAS.as_ptr().cast(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        }
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    pub fn trim_glibc() {
        // SAFETY: malloc_trim only walks glibc's own arenas under their locks; it takes no
        // pointer and is safe to call from any thread at any time.
        unsafe {
            libc::malloc_trim(0);
        }
    }

    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    pub fn trim_glibc() {}

    #[cfg(target_os = "linux")]
    pub fn disable_thp() -> bool {
        // SAFETY: PR_SET_THP_DISABLE takes integer arguments only and sets a flag of this
        // process's memory map; it reads and writes no memory of ours.
        unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0 }
    }

    #[cfg(not(target_os = "linux"))]
    pub fn disable_thp() -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The purge names an existing mallctl (a wrong name would fail with ENOENT and leave the
    /// build's garbage with jemalloc until it decays).
    /// The library's tests run without the binary's options: jemalloc's own default.
    #[test]
    fn jemalloc_reports_its_huge_page_mode() {
        let mode = jemalloc_thp_mode().expect("opt.thp is a string option");
        assert!(["default", "always", "never", "not supported"].contains(&mode.as_str()), "{mode}");
        assert_eq!(sys::jemalloc_opt_str(b"opt.no_such_option\0"), None);
    }

    /// The kernel takes the flag (it shows in /proc/self/status). Only this test's process
    /// is affected, and no test depends on huge pages.
    #[test]
    fn huge_pages_can_be_turned_off() {
        assert!(without_huge_pages());
        let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
        let line = status.lines().find(|l| l.starts_with("THP_enabled:")).expect("THP_enabled line");
        assert_eq!(line.split_whitespace().nth(1), Some("0"), "{line}");
    }

    #[test]
    fn jemalloc_knows_the_purge_of_all_arenas() {
        assert_eq!(sys::purge_jemalloc(), 0);
        release_free_memory();
    }
}
