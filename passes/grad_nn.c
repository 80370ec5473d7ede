/* grad_nn.c — derivative rules of the nn family (grad.h). */
#include "grad.h"

const tjg_rule_entry tjg_rules_nn[] = {
    {-1, NULL, NULL},
};
