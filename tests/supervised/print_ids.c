/* Prints "ruid=R euid=E" and exits 0, whatever its arguments: run as a script's #! interpreter. */
#include <stdio.h>
#include <unistd.h>

int main(void) {
  printf("ruid=%d euid=%d\n", (int)getuid(), (int)geteuid());
  return 0;
}
