void startup_empty(void) {}
