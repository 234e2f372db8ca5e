/* The pthread functions that glibc 2.34 moved from libpthread into libc under GLIBC_2.34 (and
 * pthread_sigmask and pthread_getattr_np, under GLIBC_2.32), bound to their versions of glibc
 * 2.2.5 and 2.12. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>

#include "old_version.h"

/* The names are the linker's (--wrap) and glibc's. */
/* NOLINTBEGIN(readability-identifier-naming) */
/* libgcc's and libstdc++'s test for "threads are in use" takes its address. */
int __pthread_key_create(pthread_key_t* key, void (*destructor)(void*));

TCPTUNE_OLD_VERSION(pthread_create, "GLIBC_2.2.5");
TCPTUNE_OLD_VERSION(pthread_join, "GLIBC_2.2.5");
TCPTUNE_OLD_VERSION(pthread_once, "GLIBC_2.2.5");
TCPTUNE_OLD_VERSION(__pthread_key_create, "GLIBC_2.2.5");
TCPTUNE_OLD_VERSION(pthread_sigmask, "GLIBC_2.2.5");
TCPTUNE_OLD_VERSION(pthread_setname_np, "GLIBC_2.12");
TCPTUNE_OLD_VERSION(pthread_mutex_trylock, "GLIBC_2.2.5");
TCPTUNE_OLD_VERSION(pthread_getattr_np, "GLIBC_2.2.5");
TCPTUNE_OLD_VERSION(pthread_attr_getstack, "GLIBC_2.2.5");

TCPTUNE_WRAPPER int __wrap_pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                                          void* arg) {
  return tcptune_old_pthread_create(thread, attr, start, arg);
}

TCPTUNE_WRAPPER int __wrap_pthread_join(pthread_t thread, void** result) {
  return tcptune_old_pthread_join(thread, result);
}

TCPTUNE_WRAPPER int __wrap_pthread_once(pthread_once_t* once, void (*routine)(void)) {
  return tcptune_old_pthread_once(once, routine);
}

TCPTUNE_WRAPPER int __wrap___pthread_key_create(pthread_key_t* key, void (*destructor)(void*)) {
  return tcptune_old___pthread_key_create(key, destructor);
}

TCPTUNE_WRAPPER int __wrap_pthread_sigmask(int how, const sigset_t* set, sigset_t* old) {
  return tcptune_old_pthread_sigmask(how, set, old);
}

TCPTUNE_WRAPPER int __wrap_pthread_setname_np(pthread_t thread, const char* name) {
  return tcptune_old_pthread_setname_np(thread, name);
}
TCPTUNE_WRAPPER int __wrap_pthread_mutex_trylock(pthread_mutex_t* mutex) {
  return tcptune_old_pthread_mutex_trylock(mutex);
}

TCPTUNE_WRAPPER int __wrap_pthread_getattr_np(pthread_t thread, pthread_attr_t* attributes) {
  return tcptune_old_pthread_getattr_np(thread, attributes);
}

TCPTUNE_WRAPPER int __wrap_pthread_attr_getstack(const pthread_attr_t* attributes, void** stack, size_t* size) {
  return tcptune_old_pthread_attr_getstack(attributes, stack, size);
}
/* NOLINTEND(readability-identifier-naming) */
