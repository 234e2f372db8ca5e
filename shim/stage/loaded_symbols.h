/* A function defined by an object already loaded in the process, found by reading the objects'
   own symbol tables (dl_iterate_phdr, then DT_GNU_HASH or DT_HASH), with no dl function: the
   first stage uses it to reach glibc's private loader entry points where libdl.so.2 is not
   loaded (dl_functions.h). glibc and musl both have dl_iterate_phdr. */
#ifndef TCPTUNE_STAGE_LOADED_SYMBOLS_H
#define TCPTUNE_STAGE_LOADED_SYMBOLS_H

#pragma GCC visibility push(hidden)
/* The address of `name`'s definition as a function (STT_FUNC) in the first loaded object, in
   load order, that defines it: the version an unversioned reference binds to (a hidden,
   non-default version is passed over). NULL when no loaded object defines it, and in a child
   forked while its parent walked. Takes the loader's lock for the walk (dl_iterate_phdr): not
   async-signal-safe. */
void* stage_loaded_function(const char* name);
#pragma GCC visibility pop

#endif
