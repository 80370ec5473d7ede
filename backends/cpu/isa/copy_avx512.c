/* copy_avx512.c — backends/cpu/copy.c built for avx512 (see backends/cpu/isa.h;
 * CMakeLists.txt passes the instruction set's flags). */
#define TJCPU_ISA_SUFFIX avx512
#include "backends/cpu/copy.c"
