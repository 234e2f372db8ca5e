# Where `cmake --install` puts tcptune (FHS; GNUInstallDirs, so the Debian multiarch libdir under
# the /usr prefix). Read before the subdirectories: the CLI compiles in where its shim is.
#   bin/tcptune                                 the command (static)
#   <libdir>/tcptune/libtcptune.so, -core.so    the shim: a private directory, out of the loader's
#                                               search path and of Debian's shared-library rules
#   share/tcptune/presets/*.toml                the policy presets
#   share/tcptune/container-entrypoint.sh       the container entrypoint
#   /etc/tcptune/policy.toml                    the example system policy (the built-in default);
#                                               PREFIX/etc/tcptune/ for a prefix other than /usr
#   share/doc/tcptune/                          docs/*.md, and the package's copyright
# Man pages and shell completion install with their own rules (docs/man), into
# TCPTUNE_INSTALL_MANDIR and TCPTUNE_INSTALL_BASH_COMPLETIONDIR; the package takes every file
# that `cmake --install` installs, so nothing else is needed for them to be packaged.
include(GNUInstallDirs)
set(TCPTUNE_INSTALL_SHIMDIR ${CMAKE_INSTALL_LIBDIR}/tcptune)
set(TCPTUNE_INSTALL_DATADIR ${CMAKE_INSTALL_DATADIR}/tcptune)
set(TCPTUNE_INSTALL_PRESETDIR ${TCPTUNE_INSTALL_DATADIR}/presets)
set(TCPTUNE_INSTALL_DOCDIR ${CMAKE_INSTALL_DOCDIR})
set(TCPTUNE_INSTALL_MANDIR ${CMAKE_INSTALL_MANDIR})
set(TCPTUNE_INSTALL_BASH_COMPLETIONDIR ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
# The shim's directory as seen from bin/, which `tcptune run` and `tcptune install` look in.
file(RELATIVE_PATH TCPTUNE_SHIMDIR_FROM_BINDIR ${CMAKE_INSTALL_FULL_BINDIR}
  ${CMAKE_INSTALL_PREFIX}/${TCPTUNE_INSTALL_SHIMDIR})

option(TCPTUNE_INSTALL_STRIP "Strip tcptune and the shim when installing (cmake --install)" ON)
