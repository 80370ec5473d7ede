/* internal.h — what the CUDA backend's own files share beyond cuda.h: the
 * driver in use and the bookkeeping of launches. */
#ifndef TJIT_CUDA_INTERNAL_H
#define TJIT_CUDA_INTERNAL_H

#include "backends/cuda/cuda.h"
#include "backends/cuda/driver.h"

#define TJCU_MAX_DEVICES 16

/* The driver the backend runs on (NULL without one). */
const tjcu_driver *tjcu_state_driver(void);
/* TJ_OK when dev is an available CUDA device, else an error naming what. */
tj_status tjcu_check_device(const char *what, tj_device dev);
/* Remembers the last kernel launched on this thread's stream of dev. */
void tjcu_note_launch(tj_device dev, const char *kernel);

#endif
