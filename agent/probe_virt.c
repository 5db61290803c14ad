#include "probe_modules.h"
static int tmp_run(struct probe_ctx *c, struct json_object *o) { (void)c; (void)o; return 0; }
const struct probe_ops probe_virt_ops = { .name = "virt", .run = tmp_run };
const struct probe_ops probe_labels_ops = { .name = "labels", .run = tmp_run };
