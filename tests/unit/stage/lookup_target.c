/* Names for the stage's symbol lookup to find, in an object built with one hash table style:
   stage_lookup_<style>_answer, a function; _versioned, a function in two versions (the old one
   hidden, LOOKUP_OLD, answering 1; the default, LOOKUP_NEW, answering 2); _variable, data. */
#define LOOKUP_JOIN(style, name) stage_lookup_##style##_##name
#define LOOKUP_NAME(style, name) LOOKUP_JOIN(style, name)
#define LOOKUP_TEXT(text) #text
#define LOOKUP_STRING(text) LOOKUP_TEXT(text)
/* The project builds with hidden visibility by default; these are what the object exports. */
#define LOOKUP_EXPORT __attribute__((visibility("default")))

LOOKUP_EXPORT int LOOKUP_NAME(LOOKUP_STYLE, variable) = 7;

LOOKUP_EXPORT int LOOKUP_NAME(LOOKUP_STYLE, answer)(void) {
  return 42;
}

LOOKUP_EXPORT int lookup_versioned_old(void) {
  return 1;
}

LOOKUP_EXPORT int lookup_versioned_new(void) {
  return 2;
}

__asm__(".symver lookup_versioned_old, " LOOKUP_STRING(LOOKUP_NAME(LOOKUP_STYLE, versioned)) "@LOOKUP_OLD");
__asm__(".symver lookup_versioned_new, " LOOKUP_STRING(LOOKUP_NAME(LOOKUP_STYLE, versioned)) "@@LOOKUP_NEW");
