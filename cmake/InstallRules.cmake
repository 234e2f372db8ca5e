# What `cmake --install` installs, where cmake/InstallLayout.cmake says. The Debian package
# (cmake/DebianPackage.cmake, TCPTUNE_DEB) is this same tree under /usr, with its changelog and
# lintian overrides.

# Stripped unless TCPTUNE_INSTALL_STRIP is off (`cmake --install --strip` strips either way):
# the static tcptune carries 44 MB of debug information, the shim's core 25 MB. First in the
# install script, so that every target's strip step below sees it.
if(TCPTUNE_INSTALL_STRIP)
  install(CODE "set(CMAKE_INSTALL_DO_STRIP TRUE)")
endif()

# The loader splits LD_PRELOAD at spaces and colons: a shim under such a prefix cannot be
# preloaded (tcptune run and enable refuse it). Said at install time, as `--prefix` may differ
# from the configured one.
install(CODE [[
  if(CMAKE_INSTALL_PREFIX MATCHES "[ :]")
    message(WARNING "the prefix \"${CMAKE_INSTALL_PREFIX}\" has a space or a ':', which LD_PRELOAD cannot hold: "
      "the shim installed there cannot be preloaded (tcptune run refuses it); install under a path without them")
  endif()
]])
install(TARGETS tcptune_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The stage dlopens the core from its own directory: both go to the same private directory.
install(TARGETS tcptune tcptune_core LIBRARY DESTINATION ${TCPTUNE_INSTALL_SHIMDIR})
install(DIRECTORY config/presets/ DESTINATION ${TCPTUNE_INSTALL_PRESETDIR} FILES_MATCHING PATTERN "*.toml")
install(PROGRAMS examples/container-entrypoint.sh DESTINATION ${TCPTUNE_INSTALL_DATADIR})
# The example system policy: the built-in default written out, so that installing it changes
# nothing until it is edited. In PREFIX/etc/tcptune, or /etc/tcptune for the /usr prefix (as
# GNUInstallDirs does, but with the prefix of the install, `cmake --install --prefix` included);
# the shim reads /etc/tcptune/policy.toml only. An existing one (the admin's) is kept, as dpkg
# keeps a conffile.
string(CONFIGURE [[
  if(CMAKE_INSTALL_PREFIX MATCHES "^/usr/?$")
    set(_policy_dir /etc/tcptune)
  else()
    set(_policy_dir "${CMAKE_INSTALL_PREFIX}/etc/tcptune")
  endif()
  if(EXISTS "$ENV{DESTDIR}${_policy_dir}/policy.toml")
    message(STATUS "Kept: $ENV{DESTDIR}${_policy_dir}/policy.toml")
  else()
    file(INSTALL DESTINATION "${_policy_dir}" TYPE FILE RENAME policy.toml
      FILES "@PROJECT_SOURCE_DIR@/config/system-policy.toml")
  endif()
]] _install_system_policy @ONLY)
install(CODE "${_install_system_policy}")

# The docs link to each other by file name, as they lie here. The copyright file names the
# licences of what is linked into the binaries (packaging/deb/copyright, in DEP-5).
file(GLOB TCPTUNE_DOCS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${TCPTUNE_DOCS} packaging/deb/copyright DESTINATION ${TCPTUNE_INSTALL_DOCDIR})
