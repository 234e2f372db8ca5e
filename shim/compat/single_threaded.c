/* glibc 2.32's __libc_single_threaded, which the static C++ runtime reads to skip atomic
 * operations. Zero means "the process may have several threads", which is always true, so the
 * runtime keeps its atomics wherever it runs. */
__attribute__((visibility("hidden"))) char __libc_single_threaded = 0;  // NOLINT(readability-identifier-naming)
