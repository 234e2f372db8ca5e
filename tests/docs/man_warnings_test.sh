#!/bin/sh
# Each man page renders, at 80 columns, without a warning from `man --warnings` (groff -w), with
# its NAME line read by lexgrog(1) as apropos and whatis will. Arguments: the generated pages.
set -u
if ! command -v man >/dev/null 2>&1 || ! command -v groff >/dev/null 2>&1; then
  echo "SKIP: man or groff is not installed (apt-get install man-db groff-base)"
  exit 77
fi
failed=0
for page in "$@"; do
  name=$(basename "$page")
  if [ ! -s "$page" ]; then
    echo "FAIL $name: $page is missing or empty"
    failed=1
    continue
  fi
  warnings=$(MANWIDTH=80 timeout 60 man --warnings -l "$page" 2>&1 >/dev/null)
  if [ -n "$warnings" ]; then
    echo "FAIL $name: man --warnings says:"
    printf '%s\n' "$warnings"
    failed=1
  fi
  # The page's own title and its NAME section, as a reader sees them.
  text=$(MANWIDTH=80 timeout 60 man -l "$page" 2>/dev/null)
  title=${name%.*}
  case $text in
    *"$title - "*) ;;
    *) echo "FAIL $name: the rendered page has no NAME line '$title - ...'"; failed=1 ;;
  esac
  if command -v lexgrog >/dev/null 2>&1; then
    whatis=$(lexgrog "$page" 2>&1)
    case $whatis in
      *"\"$title - "*) ;;
      *) echo "FAIL $name: lexgrog cannot read its NAME line: $whatis"; failed=1 ;;
    esac
  fi
  [ "$failed" -eq 0 ] && echo "ok   $name"
done
exit "$failed"
