/* scatter.h — what the scatter ops' shape rule (core/scatter_rules.c) shares
 * with their kernels and derivative rules: which view each one writes
 * through, and where that view lies in a given tensor. */
#ifndef TJIT_SCATTER_H
#define TJIT_SCATTER_H

#include "core.h"

/* The view op a scatter op writes through (TJ_OP_select for
 * TJ_OP_select_scatter, ...; TJ_OP_as_strided_copy, which reads the same
 * elements, for TJ_OP_as_strided_scatter), or -1 for other ops. */
int tjc_scatter_view_op(int scatter_id);

/* The view of base that scatter call c writes through: the view op's shape
 * rule over base with c's attributes (an error names c's op). */
tj_status tjc_scatter_view(const tjc_call *c, tj_tensor *base, tjc_meta *view);

/* The elements that size, stride and storage_offset (attrs[0..2], checked
 * against a tensor of n elements) pick, as a view of base laid out
 * row-major; writes: refuse elements picked twice. */
tj_status tjc_strided_pick(const tjc_call *c, const tj_attr *attrs, int64_t n, bool writes,
                           const tj_tensor *base, tjc_meta *view);
/* Whether those elements overlap (some element picked twice). */
bool tjc_strided_overlaps(const int64_t *size, const int64_t *stride, int ndim);

#endif
