/* SPDX-License-Identifier: MIT */
/* The probe modules: one per capability family, each exporting its ops. */
#ifndef FLEETBENCH_PROBE_MODULES_H
#define FLEETBENCH_PROBE_MODULES_H

#include "probe.h"

extern const struct probe_ops probe_host_ops;     /* probe_host.c */
extern const struct probe_ops probe_kernel_ops;   /* probe_kernel.c */
extern const struct probe_ops probe_virt_ops;     /* probe_virt.c */
extern const struct probe_ops probe_labels_ops;   /* probe_labels.c */
extern const struct probe_ops probe_thp_ops;      /* probe_thp.c */
extern const struct probe_ops probe_hugetlb_ops;  /* probe_hugetlb.c */
extern const struct probe_ops probe_iouring_ops;  /* probe_iouring.c */
extern const struct probe_ops probe_cpufreq_ops;  /* probe_cpufreq.c */
extern const struct probe_ops probe_block_ops;    /* probe_block.c */
extern const struct probe_ops probe_sysctl_ops;   /* probe_sysctl.c */
extern const struct probe_ops probe_vmstat_ops;   /* probe_vmstat.c */
extern const struct probe_ops probe_pmu_ops;      /* probe_pmu.c */
extern const struct probe_ops probe_steal_ops;    /* probe_stat.c */
extern const struct probe_ops probe_psi_ops;      /* probe_psi.c */
extern const struct probe_ops probe_topology_ops; /* probe_topology.c */

#endif
