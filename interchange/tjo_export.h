/* tjo_export.h — helpers the export rules share (export_ops.c defines
 * them): node facts, one-node emitters that return the output's name (NULL
 * on failure), casts, and Reduce* nodes in the opset's form. */
#ifndef TJIT_INTERCHANGE_TJO_EXPORT_H
#define TJIT_INTERCHANGE_TJO_EXPORT_H

#include "tjo.h"

const tj_type *tjo_in_type(const tj_node *n, int i);
const tj_type *tjo_out_type(const tj_node *n, int k);
const tj_attr *tjo_nattr(const tj_node *n, const char *name);
/* op(a) and op(a, b) into out (NULL: a fresh name). */
const char *tjo_op1(tjo_exporter *ex, const char *op, const char *a, const char *out);
const char *tjo_op2(tjo_exporter *ex, const char *op, const char *a, const char *b, const char *out);
/* x as dtype `to` (x itself when from == to and out is NULL). */
const char *tjo_xcast(tjo_exporter *ex, const char *x, int from, int to, const char *out);
const char *tjo_reduce(tjo_exporter *ex, const char *op, const char *x, const int64_t *dims, int nd,
                       bool keep, const char *out);
/* TJ_OK when last is a name, else the pending error. */
tj_status tjo_done(tjo_exporter *ex, const char *last);

#endif
