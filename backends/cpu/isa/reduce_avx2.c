/* reduce_avx2.c — backends/cpu/reduce.c built for avx2 (see backends/cpu/isa.h;
 * CMakeLists.txt passes the instruction set's flags). */
#define TJCPU_ISA_SUFFIX avx2
#include "backends/cpu/reduce.c"
