/* TCPTUNE_OLD_VERSION(name, version) declares tcptune_old_<name>, of <name>'s type, bound to
 * <name>@<version>: the version glibc before 2.34 defines (in libpthread or libdl), which
 * glibc 2.34 and later keep as an alias of the same function in libc. The link's --wrap=<name>
 * sends every reference to <name>, the static C++ runtime's too, to __wrap_<name>, which calls
 * this one with its arguments unchanged. */
#ifndef TCPTUNE_COMPAT_OLD_VERSION_H
#define TCPTUNE_COMPAT_OLD_VERSION_H

#define TCPTUNE_OLD_VERSION(name, version)    \
  extern __typeof__(name) tcptune_old_##name; \
  __asm__(".symver tcptune_old_" #name ", " #name "@" version)

#define TCPTUNE_WRAPPER __attribute__((visibility("hidden")))

#endif
