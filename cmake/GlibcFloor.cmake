# tcptune_glibc_floor(<target>): the shared library <target> (C or C++) needs no symbol version
# newer than GLIBC_2.17 and no library but glibc's own, so that it loads into programs of
# CentOS 7 and later. tests/preload/glibc_floor.py checks the result.
#  - the C++ runtime is linked in statically (libstdc++.so.6 and libgcc_s.so.1 carry GLIBCXX_
#    and GCC_ versions that old images lack);
#  - shim/compat defines locally what has no older version (__libc_single_threaded,
#    _dl_find_object, getentropy, arc4random, stat, fstat, fstat64);
#  - --wrap binds each function named in a TCPTUNE_OLD_VERSION line of shim/compat to its older
#    version;
#  - libpthread.so.0 and libdl.so.2 are needed libraries: before glibc 2.34 those functions
#    live there, and a preloaded library cannot count on the program to load them (on glibc
#    2.34 and later they are empty).
# libtcptune.so's first stage does without it: in C, it references nothing newer than 2.17 and
# reaches the dl functions without libdl.so.2 (shim/stage/dl_functions.h).
set(TCPTUNE_GLIBC_COMPAT_DIR ${CMAKE_CURRENT_LIST_DIR}/../shim/compat)
set(TCPTUNE_GLIBC_OLD_VERSION_SOURCES
  ${TCPTUNE_GLIBC_COMPAT_DIR}/pthread_old_versions.c
  ${TCPTUNE_GLIBC_COMPAT_DIR}/dl_old_versions.c)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${TCPTUNE_GLIBC_OLD_VERSION_SOURCES})

function(tcptune_glibc_floor target)
  get_target_property(type ${target} TYPE)
  if(NOT type MATCHES "^(SHARED|MODULE)_LIBRARY$")
    message(FATAL_ERROR "tcptune_glibc_floor(${target}): not a shared library (${type})")
  endif()
  set(wraps "")
  foreach(source IN LISTS TCPTUNE_GLIBC_OLD_VERSION_SOURCES)
    file(STRINGS ${source} lines REGEX "^TCPTUNE_OLD_VERSION\\(")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^TCPTUNE_OLD_VERSION\\(([A-Za-z0-9_]+),.*$" "LINKER:--wrap=\\1" wrap "${line}")
      list(APPEND wraps "${wrap}")
    endforeach()
  endforeach()
  if(wraps STREQUAL "")
    message(FATAL_ERROR "no TCPTUNE_OLD_VERSION lines in ${TCPTUNE_GLIBC_OLD_VERSION_SOURCES}")
  endif()
  target_link_libraries(${target} PRIVATE tcptune_glibc_compat)
  target_link_options(${target} PRIVATE
    -static-libstdc++ -static-libgcc
    ${wraps}
    LINKER:--no-undefined
    "LINKER:--push-state,--no-as-needed,-l:libpthread.so.0,-l:libdl.so.2,--pop-state")
endfunction()
