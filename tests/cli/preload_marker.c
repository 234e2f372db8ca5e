/* A library a unit already preloads (as jemalloc would be): tcptune enable must keep it in
   LD_PRELOAD after the shim. It does nothing but be there, in /proc/self/maps. */
int tcptune_preload_marker(void) {
  return 1;
}
