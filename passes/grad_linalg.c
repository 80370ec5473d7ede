/* grad_linalg.c — derivative rules of the linalg family (grad.h). */
#include "grad.h"

const tjg_rule_entry tjg_rules_linalg[] = {
    {-1, NULL, NULL},
};
