# tcptune_glibc_floor(<target>): the shared library <target> (C or C++) needs no symbol version
# newer than GLIBC_2.17 and no library but glibc's own, so that it loads into programs of
# CentOS 7 and later. tests/preload/glibc_floor.py checks the result.
#  - the C++ runtime is linked in statically (libstdc++.so.6 and libgcc_s.so.1 carry GLIBCXX_
#    and GCC_ versions that old images lack);
#  - shim/compat defines locally what has no older version (__libc_single_threaded,
#    _dl_find_object, getentropy, arc4random, stat, fstat, fstat64);
#  - --wrap binds each function named in a TCPTUNE_OLD_VERSION line of shim/compat to its older
#    version;
#  - each such reference names, in its verneed entry, the library that defined it before glibc
#    2.34 (libpthread.so.0, libdl.so.2), not libc.so.6: the loader of glibc before 2.30 stops
#    at the file named there ("symbol pthread_create, version GLIBC_2.2.5 not defined in file
#    libc.so.6 with link time reference"), the loader since 2.30 searches on to libc.so.6.
#    The link reads them from stand-ins of those two libraries, written from the
#    TCPTUNE_OLD_VERSION lines and linked before libc.so.6; the stand-ins are link inputs only
#    (never installed, no RPATH): at run time the system's own files are loaded;
#  - libpthread.so.0 and libdl.so.2 are needed libraries, before libc.so.6: before glibc 2.34
#    those functions live there, and a preloaded library cannot count on the program to load
#    them (on glibc 2.34 and later they are empty).
# libtcptune.so's first stage does without it: in C, it references nothing newer than 2.17 and
# reaches the dl functions without libdl.so.2 (shim/stage/dl_functions.h).
set(TCPTUNE_GLIBC_COMPAT_DIR ${CMAKE_CURRENT_LIST_DIR}/../shim/compat)
set(TCPTUNE_GLIBC_OLD_VERSION_SOURCES
  ${TCPTUNE_GLIBC_COMPAT_DIR}/pthread_old_versions.c
  ${TCPTUNE_GLIBC_COMPAT_DIR}/dl_old_versions.c)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${TCPTUNE_GLIBC_OLD_VERSION_SOURCES})

# The stand-in for the library <soname> (libpthread.so.0, libdl.so.2), which defined the functions
# of the TCPTUNE_OLD_VERSION lines of <source> before glibc 2.34: each at its version, and nothing
# else. Its file is <soname> in <binary dir>/glibc_link_stubs, outside every run-time path.
set(TCPTUNE_GLIBC_LINK_STUB_DIR ${CMAKE_BINARY_DIR}/glibc_link_stubs)
set(TCPTUNE_GLIBC_LINK_STUBS "")
function(tcptune_glibc_link_stub soname source)
  file(STRINGS ${source} lines REGEX "^TCPTUNE_OLD_VERSION\\(")
  set(versions "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^TCPTUNE_OLD_VERSION\\(([A-Za-z0-9_]+), *\"([A-Za-z0-9_.]+)\"\\).*$" "\\1;\\2" pair "${line}")
    list(LENGTH pair fields)
    if(NOT fields EQUAL 2)
      message(FATAL_ERROR "${source}: cannot read \"${line}\"")
    endif()
    list(GET pair 0 name)
    list(GET pair 1 version)
    string(MAKE_C_IDENTIFIER "${version}" key)
    if(NOT version IN_LIST versions)
      list(APPEND versions ${version})
    endif()
    list(APPEND names_${key} ${name})
  endforeach()
  if(versions STREQUAL "")
    message(FATAL_ERROR "no TCPTUNE_OLD_VERSION lines in ${source}")
  endif()
  file(RELATIVE_PATH origin ${PROJECT_SOURCE_DIR} ${source})
  set(code "/* Written by cmake/GlibcFloor.cmake from ${origin}: a link-time stand-in for ${soname}\n   of glibc before 2.34, never loaded. */\n")
  set(script "/* Written by cmake/GlibcFloor.cmake from ${origin}. */\n")
  set(local "local: *; ")
  foreach(version IN LISTS versions)
    string(MAKE_C_IDENTIFIER "${version}" key)
    string(APPEND script "${version} { global: ")
    foreach(name IN LISTS names_${key})
      string(APPEND code "__attribute__((visibility(\"default\"))) void ${name}(void);\nvoid ${name}(void) {}\n")
      string(APPEND script "${name}; ")
    endforeach()
    string(APPEND script "${local}};\n")
    set(local "")
  endforeach()
  string(MAKE_C_IDENTIFIER "${soname}" stub)
  set(stub tcptune_glibc_link_stub_${stub})
  set(generated ${CMAKE_BINARY_DIR}/glibc_link_stubs_sources/${soname})
  file(CONFIGURE OUTPUT ${generated}.c CONTENT "${code}" @ONLY)
  file(CONFIGURE OUTPUT ${generated}.map CONTENT "${script}" @ONLY)
  add_library(${stub} SHARED ${generated}.c)
  set_target_properties(${stub} PROPERTIES
    LIBRARY_OUTPUT_DIRECTORY ${TCPTUNE_GLIBC_LINK_STUB_DIR} PREFIX "" OUTPUT_NAME ${soname} SUFFIX ""
    NO_SONAME ON LINK_DEPENDS ${generated}.map LINK_OPTIONS "")
  target_compile_options(${stub} PRIVATE -fno-sanitize=all)
  target_link_options(${stub} PRIVATE -nostdlib LINKER:-soname,${soname} LINKER:--version-script=${generated}.map)
  set(TCPTUNE_GLIBC_LINK_STUBS ${TCPTUNE_GLIBC_LINK_STUBS} ${stub} PARENT_SCOPE)
endfunction()
tcptune_glibc_link_stub(libpthread.so.0 ${TCPTUNE_GLIBC_COMPAT_DIR}/pthread_old_versions.c)
tcptune_glibc_link_stub(libdl.so.2 ${TCPTUNE_GLIBC_COMPAT_DIR}/dl_old_versions.c)

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
    "LINKER:--push-state,--no-as-needed,${TCPTUNE_GLIBC_LINK_STUB_DIR}/libpthread.so.0,${TCPTUNE_GLIBC_LINK_STUB_DIR}/libdl.so.2,--pop-state")
  add_dependencies(${target} ${TCPTUNE_GLIBC_LINK_STUBS})
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS
    ${TCPTUNE_GLIBC_LINK_STUB_DIR}/libpthread.so.0 ${TCPTUNE_GLIBC_LINK_STUB_DIR}/libdl.so.2)
endfunction()
