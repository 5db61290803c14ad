/* SPDX-License-Identifier: MIT */
/*
 * Host labels: provider, instance type and region, as given by flag or
 * config, else inferred from the DMI strings the virt probe read.
 */
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "codec.h"
#include "probe_modules.h"
#include "probe_virt.h"

enum dmi_match {
	MATCH_EXACT,
	MATCH_PREFIX,
	MATCH_CONTAINS_NOCASE,
};

struct dmi_cond {
	const char *field; /* NULL ends the rule */
	enum dmi_match match;
	const char *pattern;
};

/*
 * Provider inference: the first rule whose conditions all hold wins, so
 * specific rules (Oracle Cloud on QEMU DMI, EC2 on Xen DMI) come before the
 * generic hypervisor vendors at the end.
 */
static const struct {
	const char *provider;
	struct dmi_cond cond[3];
} provider_rules[] = {
	{ "aws", { { "sys_vendor", MATCH_EXACT, "Amazon EC2" } } },
	{ "aws", { { "bios_vendor", MATCH_EXACT, "Amazon EC2" } } },
	/* Xen-era EC2: sys_vendor "Xen", bios_version "4.11.amazon" */
	{ "aws", { { "bios_version", MATCH_CONTAINS_NOCASE, "amazon" } } },
	{ "gcp", { { "sys_vendor", MATCH_EXACT, "Google" } } },
	{ "gcp", { { "product_name", MATCH_EXACT, "Google Compute Engine" } } },
	{ "azure",
	  { { "sys_vendor", MATCH_EXACT, "Microsoft Corporation" },
	    { "product_name", MATCH_EXACT, "Virtual Machine" },
	    { "chassis_asset_tag", MATCH_EXACT,
	      "7783-7084-3265-9085-8269-3286-77" } } },
	{ "digitalocean", { { "sys_vendor", MATCH_PREFIX, "DigitalOcean" } } },
	{ "digitalocean", { { "bios_vendor", MATCH_PREFIX, "DigitalOcean" } } },
	{ "hetzner", { { "sys_vendor", MATCH_PREFIX, "Hetzner" } } },
	{ "openstack", { { "product_name", MATCH_EXACT, "OpenStack Nova" } } },
	{ "openstack",
	  { { "product_name", MATCH_EXACT, "OpenStack Compute" } } },
	{ "openstack",
	  { { "sys_vendor", MATCH_EXACT, "OpenStack Foundation" } } },
	{ "alibaba", { { "sys_vendor", MATCH_PREFIX, "Alibaba Cloud" } } },
	{ "oci", { { "chassis_asset_tag", MATCH_EXACT, "OracleCloud.com" } } },
	{ "scaleway", { { "sys_vendor", MATCH_PREFIX, "Scaleway" } } },
	{ "vultr", { { "sys_vendor", MATCH_PREFIX, "Vultr" } } },
	{ "linode", { { "sys_vendor", MATCH_PREFIX, "Linode" } } },
	{ "linode", { { "sys_vendor", MATCH_PREFIX, "Akamai" } } },
	{ "ovh", { { "sys_vendor", MATCH_PREFIX, "OVH" } } },
	{ "tencent", { { "sys_vendor", MATCH_PREFIX, "Tencent Cloud" } } },
	{ "exoscale", { { "sys_vendor", MATCH_PREFIX, "Exoscale" } } },
	{ "qemu-kvm", { { "sys_vendor", MATCH_EXACT, "QEMU" } } },
	{ "vmware", { { "sys_vendor", MATCH_EXACT, "VMware, Inc." } } },
	{ "xen", { { "sys_vendor", MATCH_EXACT, "Xen" } } },
};

static bool cond_holds(const struct virt_dmi *dmi, const struct dmi_cond *c)
{
	const char *v = virt_dmi_get(dmi, c->field);

	if (!v)
		return false;
	switch (c->match) {
	case MATCH_EXACT:
		return !strcmp(v, c->pattern);
	case MATCH_PREFIX:
		return !strncmp(v, c->pattern, strlen(c->pattern));
	case MATCH_CONTAINS_NOCASE:
		return strcasestr(v, c->pattern) != NULL;
	}
	return false;
}

/* False, with the reason in why ("not given; DMI absent"), when DMI
 * cannot be used at all. */
static bool dmi_usable(const struct virt_dmi *dmi, char *why, size_t size)
{
	if (!dmi || !dmi->probed) {
		snprintf(why, size, "not given; DMI not probed");
		return false;
	}
	if (dmi->present < 0) {
		snprintf(why, size, "not given; DMI unreadable (%s)",
			 probe_reason(dmi->present));
		return false;
	}
	if (!dmi->present) {
		snprintf(why, size, "not given; DMI absent");
		return false;
	}
	return true;
}

/* The provider DMI names, or NULL with the reason in why. */
static const char *dmi_provider(const struct virt_dmi *dmi, char *why,
				size_t size)
{
	const char *vendor;

	if (!dmi_usable(dmi, why, size))
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(provider_rules); i++) {
		bool all = true;

		for (size_t j = 0; all && j < ARRAY_SIZE(provider_rules[i].cond) &&
				   provider_rules[i].cond[j].field;
		     j++)
			all = cond_holds(dmi, &provider_rules[i].cond[j]);
		if (all)
			return provider_rules[i].provider;
	}
	vendor = virt_dmi_get(dmi, "sys_vendor");
	if (vendor)
		snprintf(why, size,
			 "not given; DMI sys_vendor '%s' names no known provider",
			 vendor);
	else
		snprintf(why, size, "not given; DMI sys_vendor unknown and "
				    "no DMI field names a known provider");
	return NULL;
}

/* The instance type where DMI carries it (EC2 Nitro's product_name). */
static const char *dmi_instance_type(const struct virt_dmi *dmi,
				     const char *provider, char *why,
				     size_t size)
{
	const char *vendor, *product;

	if (!dmi_usable(dmi, why, size))
		return NULL;
	vendor = virt_dmi_get(dmi, "sys_vendor");
	product = virt_dmi_get(dmi, "product_name");
	if (vendor && !strcmp(vendor, "Amazon EC2")) {
		/* a label tables print: the codec's one rule for them */
		if (product && *product &&
		    codec_control_at(product, strlen(product)) >= 0) {
			snprintf(why, size,
				 "not given; DMI product_name holds a control character");
			return NULL;
		}
		if (product && *product)
			return product;
		snprintf(why, size,
			 "not given; DMI product_name %s on aws",
			 product ? "empty" : "unreadable");
		return NULL;
	}
	if (provider)
		snprintf(why, size,
			 "not given; DMI does not carry the instance type on %s",
			 provider);
	else
		snprintf(why, size, "not given; DMI names no known provider");
	return NULL;
}

static void item_label(struct json_object *out, const char *key,
		       const struct probe_label *given, const char *inferred,
		       const char *why)
{
	struct json_object *o = item_object(out, key);

	if (given->value) {
		item_str(o, "value", given->value);
		item_str(o, "source", given->source == LABEL_FLAG ? "flag" :
				      given->source == LABEL_DMI  ? "dmi" :
								    "config");
	} else if (inferred) {
		item_str(o, "value", inferred);
		item_str(o, "source", "dmi");
	} else {
		item_unknown(o, "value", "%s", why);
		item_str(o, "source", "none");
	}
}

static int probe_labels(struct probe_ctx *ctx, struct json_object *out)
{
	const struct virt_dmi *dmi = ctx->dmi;
	const char *provider, *itype;
	char why[256], iwhy[256];

	provider = dmi_provider(dmi, why, sizeof(why));
	item_label(out, "provider", &ctx->opts->provider, provider, why);
	itype = dmi_instance_type(dmi, provider, iwhy, sizeof(iwhy));
	item_label(out, "instance_type", &ctx->opts->instance_type, itype,
		   iwhy);
	/* No DMI field carries the region. */
	item_label(out, "region", &ctx->opts->region, NULL, "not given");
	return 0;
}

const struct probe_ops probe_labels_ops = {
	.name = "labels",
	.run = probe_labels,
};
