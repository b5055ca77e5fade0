/* check.h: the C unit tests' one assertion. CHECK(cond, fmt, ...) counts a failure and prints
 * file:line, the condition and a printf-style message; a test's main returns failures != 0. */
#ifndef TB_TEST_CHECK_H
#define TB_TEST_CHECK_H

#include <stdio.h>

static int failures;
#define CHECK(cond, ...)                                                \
  do {                                                                  \
    if (!(cond)) {                                                      \
      failures++;                                                       \
      fprintf(stderr, "%s:%d: FAILED %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                     \
      fputc('\n', stderr);                                              \
    }                                                                   \
  } while (0)

#endif
