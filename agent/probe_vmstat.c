#include "probe_modules.h"
static int tmp_run(struct probe_ctx *c, struct json_object *o) { (void)c; (void)o; return 0; }
const struct probe_ops probe_vmstat_ops = { .name = "vmstat", .run = tmp_run };
const struct probe_ops probe_steal_ops = { .name = "steal", .run = tmp_run };
