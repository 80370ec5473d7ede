/* fuse_rules.h — the fuser's decisions as verdicts with their reason: whether
 * a node may enter a group, whether a producer may join a consumer, and how
 * many operands a merge would need. tj_pass_fuse (fuse.c) decides by these
 * and the fusion report (report.c) explains by the same calls, so the two
 * cannot disagree. */
#ifndef TJIT_FUSE_RULES_H
#define TJIT_FUSE_RULES_H

#include "fuser.h"

enum { TJF_MAX_OPERANDS = 60 }; /* inputs + outputs + chunk pieces, within the runner's limit */

typedef enum tjf_reason {
    TJF_FUSIBLE,
    TJF_NOT_AN_OP,          /* a prim:: node */
    TJF_OP_KIND,            /* the op's kind is not pointwise */
    TJF_OP_NO_EXPR,         /* pointwise, but no scalar expression in its row */
    TJF_OP_INPLACE,         /* an in-place form, or writes into an input */
    TJF_OP_OUTPUTS,         /* more than one output */
    TJF_NODE_OPERANDS,      /* more than three inputs */
    TJF_UNKNOWN_TYPE,       /* value: an operand or result of unknown dtype or sizes */
    TJF_UNEVEN_CHUNK,       /* a chunk or split not into equal pieces of a known tensor */
    TJF_CHUNKS_PRODUCER,    /* the consumer group chunks a value the producer makes */
    TJF_NOT_BEFORE,         /* the producer does not come before the consumer */
    TJF_GROUP_SIZE,         /* count: nodes the merged group would hold */
    TJF_USED_BEFORE,        /* node: another user of the producer comes before the consumer */
    TJF_CHUNK_USED_OUTSIDE, /* node: a chunk piece read outside the group */
    TJF_OUTPUT_SIZES,       /* value: read outside with sizes other than the group's */
    TJF_READ_TWICE,         /* the group reads the producer's result through two inputs */
    TJF_OPERAND_CAP,        /* count: operands the merged group would need */
    TJF_TWO_ROW_OPS,        /* both hold a row op; a group holds one */
    TJF_ROW_SIZES,          /* value: a member's sizes differ from the row op's (a reduction:
                             * from both its input's and its result's) */
    TJF_ROW_DROPPED_DIM,    /* value: of a keepdim=false reduction's sizes, read into other sizes */
    TJF_ROW_OUTSIDE_READ,   /* value: made outside, read by a member of a keepdim=false
                             * reduction's sizes, and not of sizes all 1 */
    TJF_ANCHOR_FORM,        /* a matrix product or convolution not of an anchor's form (fuser.h) */
    TJF_ANCHOR_DEVICE,      /* a matrix product or convolution off the CPU */
    TJF_ANCHOR_OPERAND,     /* the producer feeds the consumer's matrix product */
    TJF_TWO_ANCHORS,        /* both hold a matrix product; a group holds one */
    TJF_ANCHOR_ROW,         /* one holds a matrix product, the other (or itself) a row op */
    TJF_ANCHOR_SIZES,       /* value: a result of sizes other than the matrix product's */
} tjf_reason;

/* A tensor of known dtype and sizes (on any device). */
bool tjf_known_tensor(const tj_value *v);
bool tjf_same_sizes(const tj_type *a, const tj_type *b);

typedef struct tjf_verdict {
    tjf_reason reason;
    const tj_node *node;   /* for TJF_USED_BEFORE, TJF_CHUNK_USED_OUTSIDE */
    const tj_value *value; /* for TJF_UNKNOWN_TYPE, TJF_OUTPUT_SIZES, TJF_ROW_* */
    int count;             /* for TJF_GROUP_SIZE, TJF_OPERAND_CAP */
} tjf_verdict;

/* Whether n may enter a group by itself (a fusible op node, or a row op:
 * fuser.h). */
tjf_verdict tjf_check_node(const tj_node *n);
/* Whether n is an aten::chunk or split.Tensor into equal pieces of a known
 * tensor, which enters a group as prim::ConstantChunk. */
bool tjf_is_even_chunk(const tj_node *n);
/* Whether producer p may join consumer c (a fusible node or a group),
 * before counting operands. */
tjf_verdict tjf_check_merge(const tj_node *p, const tj_node *c);
/* After tjf_check_merge: the operands the merged group would need, and
 * TJF_OPERAND_CAP (or TJF_READ_TWICE) when the fuser would refuse it. */
tjf_verdict tjf_check_operands(const tj_node *p, const tj_node *c);
/* The rules of a merge of members a and b (a before b, nodes or groups)
 * when either holds an anchor (fuser.h): one anchor, no row op, every result
 * of the anchor's sizes, and when b holds the anchor, nothing of a feeds it.
 * anchor_a, anchor_b: the members' anchors (NULL: none); row: whether either
 * holds a row op. */
tjf_verdict tjf_check_anchors(const tj_node *a, const tj_node *b, const tj_node *anchor_a,
                              const tj_node *anchor_b, bool row);
/* Why a matrix product or convolution n cannot be an anchor (TJF_FUSIBLE: it can). */
tjf_verdict tjf_check_anchor_node(const tj_node *n);

/* Whether group a may merge with a later group b that reads nothing a makes
 * (siblings feeding one consumer), operands counted. */
tjf_verdict tjf_check_siblings(const tj_node *a, const tj_node *b);

#endif
