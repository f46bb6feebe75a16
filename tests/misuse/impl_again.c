/* A second file that defines BLITZ_IMPLEMENTATION: linked with correct.c
 * the program must fail, and the first error must name
 * blitz_define_BLITZ_IMPLEMENTATION_in_one_c_file. */
#define BLITZ_IMPLEMENTATION
#include "blitz.h"
