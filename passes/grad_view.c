/* grad_view.c — derivative rules of the view family (grad.h). */
#include "grad.h"

const tjg_rule_entry tjg_rules_view[] = {
    {-1, NULL, NULL},
};
