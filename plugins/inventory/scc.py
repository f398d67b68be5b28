# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0 (see galaxy.yml)

from __future__ import annotations

DOCUMENTATION = r"""
name: scc
short_description: SCC GPU nodes from the Alibaba Cloud ECS API
version_added: 0.1.0
author:
  - scc.nlp_training maintainers (!UNKNOWN)
description:
  - Lists ECS instances with C(DescribeInstances) (API version 2014-05-26) through the official Alibaba Cloud
    Python SDK (C(alibabacloud_ecs20140526)), in every region asked for, over every page (C(MaxResults)/C(NextToken)).
  - Each instance becomes a host with C(ansible_host) (its primary private IP), cloud metadata as C(scc_*) variables,
    and the GPU facts the roles read (C(gpu_count), C(gpu_model), C(gpu_arch), C(rdma), C(rdma_ip), C(mpi_slots))
    from the instance type table C(sccnlp/data/instance_types.yml) of this collection, which the O(instance_types)
    option extends.
  - Every node joins the group O(cluster_group) and, unless O(default_groups=false), the groups C(zone_<zone>) and
    C(type_<instance type>) (characters other than letters, digits and C(_) become C(_)).
  - Throttling, 5xx answers, connection resets and timeouts are retried with exponential backoff; other API errors
    stop with one line that names the cause and the fix. Credentials are never printed.
  - All data from the API is marked unsafe before templating, so a tag value that holds a Jinja expression (a pipe
    lookup, say) stays text and is never run.
  - "Credentials, first found: O(access_key_id) and O(access_key_secret) (or their environment variables), the
    aliyun CLI profile O(profile) of O(profile_file), then the default chain of C(alibabacloud_credentials): the
    C(ALIBABA_CLOUD_*) environment, an OIDC role (C(ALIBABA_CLOUD_ROLE_ARN), C(ALIBABA_CLOUD_OIDC_PROVIDER_ARN),
    C(ALIBABA_CLOUD_OIDC_TOKEN_FILE)), the profiles of C(~/.alibabacloud/credentials) (a RamRoleArn profile
    among them), and the RAM role of the ECS instance the controller runs on, from the instance metadata service
    (C(ALIBABA_CLOUD_ECS_METADATA) names the role; without it the role is read from the metadata)."
  - The configuration file name must end in C(.scc.yml) or C(.scc.yaml); unknown options are refused.
requirements:
  - alibabacloud_ecs20140526
  - alibabacloud_tea_openapi
  - alibabacloud_credentials
extends_documentation_fragment:
  - constructed
  - inventory_cache
options:
  plugin:
    description: Marks the file as a configuration of this plugin.
    required: true
    type: str
    choices: [scc.nlp_training.scc]
  regions:
    description:
      - Region ids to list, for example C(cn-hangzhou).
      - When empty, the region of the aliyun CLI profile is used.
    type: list
    elements: str
    default: []
    env:
      - name: ALICLOUD_REGION
      - name: ALIBABA_CLOUD_REGION_ID
  endpoint:
    description:
      - ECS endpoint to call instead of the SDK's public endpoint of each region, for example a VPC endpoint
        (C(ecs-vpc.{region}.aliyuncs.com)) or a full URL (C(http://127.0.0.1:8950)). C({region}) is replaced by the
        region being listed; a URL's scheme picks HTTP or HTTPS (default HTTPS).
    type: str
    env:
      - name: SCC_ECS_ENDPOINT
  access_key_id:
    description: AccessKey id. Falls back on the aliyun CLI profile when neither key part is set.
    type: str
    env:
      - name: ALICLOUD_ACCESS_KEY
      - name: ALIBABA_CLOUD_ACCESS_KEY_ID
  access_key_secret:
    description: AccessKey secret. Never printed.
    type: str
    env:
      - name: ALICLOUD_SECRET_KEY
      - name: ALIBABA_CLOUD_ACCESS_KEY_SECRET
  security_token:
    description: STS security token, for temporary credentials.
    type: str
    env:
      - name: ALICLOUD_SECURITY_TOKEN
      - name: ALIBABA_CLOUD_SECURITY_TOKEN
  profile:
    description:
      - Profile of the aliyun CLI configuration file O(profile_file) (modes C(AK) and C(StsToken)). Without it,
        and without keys, the file's current profile is used.
    type: str
    env:
      - name: ALICLOUD_PROFILE
      - name: ALIBABA_CLOUD_PROFILE
  profile_file:
    description: The aliyun CLI configuration file.
    type: path
    default: ~/.aliyun/config.json
  filters:
    description:
      - Which instances to list. Keys C(instance_type_family) (for example C(ecs.sccgn6)), C(instance_types) (a
        list), C(instance_ids) (a list, at most 100), C(vpc_id), C(vswitch_id), C(zone_id), C(status) (default
        C(Running); C(any) lists every status) and C(tags) (a mapping; a null value matches any value of the key).
    type: dict
    default: {}
  hostnames:
    description:
      - How hosts are named, in order of preference. The first that is set and not taken by another instance wins;
        the instance id is the last resort.
      - Each entry is one of C(hostname), C(instance_name), C(instance_id), C(private_ip) or C(tag:KEY).
    type: list
    elements: str
    default: [hostname, instance_name, instance_id]
  cluster_group:
    description: Group that holds every discovered node (the playbooks target it).
    type: str
    default: scc_cluster
  default_groups:
    description: Add each node to C(zone_<zone>) and C(type_<instance type>).
    type: bool
    default: true
  instance_types:
    description:
      - Entries merged over the built-in instance type table, keyed by instance type (C(ecs.sccgn6.24xlarge)) or
        family (C(ecs.ebmgn8v)); fields C(gpu_count), C(gpu_model), C(gpu_arch), C(rdma) (see the table's header).
    type: dict
    default: {}
  timeout:
    description: Seconds to wait for the API to connect and to answer, per request.
    type: float
    default: 10
  retries:
    description: How many times a throttled or transiently failed request is retried.
    type: int
    default: 4
  retry_delay:
    description: Seconds before the first retry; it doubles on each further retry (capped at 20 s).
    type: float
    default: 1.0
"""

EXAMPLES = r"""
# inventory/discovery.scc.yml: every running SCC GPU node of a VPC in Hangzhou
plugin: scc.nlp_training.scc
regions: [cn-hangzhou]
filters:
  instance_type_family: ecs.sccgn6
  vpc_id: vpc-bp1example
  tags:
    cluster: bert
hostnames: [instance_name, instance_id]
keyed_groups:
  - key: scc_tags.role | default('worker')
    prefix: role
compose:
  ansible_user: "'root'"

---
# The same through a VPC endpoint, credentials from the aliyun CLI profile "scc", cached for an hour
plugin: scc.nlp_training.scc
regions: [cn-hangzhou, cn-shanghai]
endpoint: ecs-vpc.{region}.aliyuncs.com
profile: scc
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: ~/.cache/scc-inventory
cache_timeout: 3600

---
# A type the built-in table does not know, and four MPI slots per node instead of one per GPU
plugin: scc.nlp_training.scc
regions: [ap-southeast-1]
filters:
  instance_types: [ecs.gn7i-c32g1.32xlarge]
instance_types:
  ecs.gn7i-c32g1.32xlarge: {gpu_count: 4, gpu_model: NVIDIA A10, gpu_arch: ampere, rdma: false}
compose:
  mpi_slots: 4
"""

import hashlib
import json
import os
from collections.abc import Mapping, Set
from typing import Any

from ansible.errors import AnsibleError
from ansible.module_utils.common.collections import is_sequence
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable
from ansible.utils.display import Display
from ansible.utils.unsafe_proxy import AnsibleUnsafe, AnsibleUnsafeText

from ansible_collections.scc.nlp_training.plugins.plugin_utils.data import DataFileError, data_path
from ansible_collections.scc.nlp_training.plugins.module_utils.scc_ecs import (
    EcsError,
    EcsInstances,
    EcsSettings,
    resolve_credentials,
)
from ansible_collections.scc.nlp_training.plugins.module_utils.scc_nodes import (
    HOSTNAME_SOURCES,
    NodeError,
    assign_names,
    default_groups,
    host_vars,
    merge_types,
)

display = Display()

FILTER_KEYS = ("instance_type_family", "instance_types", "instance_ids", "vpc_id", "vswitch_id", "zone_id",
               "status", "tags")
CACHE_FORMAT = 1
_TEMPLATE_CHARS = ("{", "}", "%", "#")


def make_unsafe(value: Any) -> Any:
    """Mark API data unsafe (never templated), like community.docker: strings with template characters are wrapped."""
    kind = type(value)
    if kind is str:  # the common case first: most API values are plain strings
        return AnsibleUnsafeText(value) if any(c in value for c in _TEMPLATE_CHARS) else value
    if kind is dict:
        return {make_unsafe(k): make_unsafe(v) for k, v in value.items()}
    if kind is list:
        return [make_unsafe(v) for v in value]
    if value is None or kind in (int, bool, float) or isinstance(value, AnsibleUnsafe):
        return value
    if isinstance(value, Mapping):
        return {make_unsafe(k): make_unsafe(v) for k, v in value.items()}
    if isinstance(value, Set):
        return {make_unsafe(v) for v in value}
    if is_sequence(value):
        return type(value)(make_unsafe(v) for v in value)
    if isinstance(value, str) and any(c in value for c in _TEMPLATE_CHARS):
        return AnsibleUnsafeText(value)
    return value


def table_path() -> str:
    """sccnlp/data/instance_types.yml of this collection (the collection's one data resolver)."""
    try:
        return data_path("instance_types.yml")
    except DataFileError as exc:
        raise AnsibleError(str(exc)) from None


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    NAME = "scc.nlp_training.scc"

    def verify_file(self, path: str) -> bool:
        """Configs named *.scc.yml / *.scc.yaml; also any other YAML file that names this plugin, so that parse can
        say the name is wrong instead of Ansible's silent "unable to parse"."""
        if not super().verify_file(path):
            return False
        return path.endswith((".scc.yml", ".scc.yaml")) or self._names_this_plugin(path)

    def _names_this_plugin(self, path: str) -> bool:
        if not path.endswith((".yml", ".yaml")):
            return False
        try:
            with open(path, encoding="utf-8") as handle:
                head = handle.read(4096)
        except OSError:
            return False
        return any(line.split(":", 1)[1].strip().strip("'\"") in (self.NAME, "scc")
                   for line in head.splitlines() if line.startswith("plugin:"))

    def _check_config(self, path: str) -> None:
        """Refuse a misnamed file and unknown options before anything is asked of the API."""
        if not path.endswith((".scc.yml", ".scc.yaml")):
            raise AnsibleError(f"{path}: the scc inventory config's file name must end in .scc.yml or .scc.yaml "
                               f"(Ansible picks the plugin by it): rename it, e.g. to "
                               f"{os.path.splitext(os.path.basename(path))[0]}.scc.yml")
        config = self.loader.load_from_file(path, cache="all") or {}
        if not isinstance(config, Mapping):
            raise AnsibleError(f"{path}: the scc inventory config must be a mapping of options, e.g. regions: [...]")
        unknown = sorted(str(k) for k in set(config) - set(self._options))
        if unknown:
            raise AnsibleError(f"{path}: unknown option(s) {', '.join(unknown)} for the scc inventory: fix the "
                               f"spelling or remove them (options: {', '.join(sorted(self._options))}; "
                               f"`ansible-doc -t inventory {self.NAME}` describes each)")

    # -- options -------------------------------------------------------------------------------------------------

    def _filters(self) -> dict[str, Any]:
        given = self.get_option("filters") or {}
        unknown = sorted(set(given) - set(FILTER_KEYS))
        if unknown:
            raise AnsibleError(f"unknown key(s) {', '.join(unknown)} under `filters`: use {', '.join(FILTER_KEYS)}")
        filters = {"status": "Running", **given}
        for key in ("instance_types", "instance_ids"):
            if filters.get(key) is not None and not is_sequence(filters[key]):
                filters[key] = [filters[key]]
        if filters.get("tags") is not None and not isinstance(filters["tags"], Mapping):
            raise AnsibleError("filters.tags must be a mapping of tag key to value, e.g. {cluster: bert}")
        return filters

    def _hostnames(self) -> list[str]:
        prefs = [str(p) for p in self.get_option("hostnames") or []]
        for pref in prefs:
            if pref not in HOSTNAME_SOURCES and not (pref.startswith("tag:") and len(pref) > 4):
                raise AnsibleError(f"`hostnames` entry {pref!r} is not one of {', '.join(HOSTNAME_SOURCES)} or "
                                   "tag:KEY")
        return prefs or ["instance_id"]

    def _type_table(self) -> dict[str, dict[str, Any]]:
        path = table_path()
        try:
            data = self.loader.load_from_file(path, cache="all") or {}
        except Exception as exc:
            raise AnsibleError(f"cannot read the instance type table {path}: {exc}; reinstall the collection") from exc
        try:
            return merge_types(data.get("instance_types") or {}, self.get_option("instance_types"))
        except NodeError as exc:
            raise AnsibleError(str(exc)) from None

    # -- data ----------------------------------------------------------------------------------------------------

    def _query_fingerprint(self, regions: list[str], filters: Mapping[str, Any], key_id: str) -> str:
        blob = json.dumps([regions, self.get_option("endpoint"), filters, key_id], sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def _fetch(self, regions: list[str], filters: Mapping[str, Any], creds: Any) -> dict[str, list[dict[str, Any]]]:
        settings = EcsSettings(endpoint=self.get_option("endpoint"), timeout=float(self.get_option("timeout")),
                               retries=int(self.get_option("retries")),
                               retry_delay=float(self.get_option("retry_delay")))
        return EcsInstances(creds, settings).list_all(regions, filters)

    def _payload(self, path: str, use_cache: bool) -> dict[str, list[dict[str, Any]]]:
        """Raw instances per region, from the cache when allowed and fresh, else from the API."""
        filters = self._filters()
        try:
            creds = resolve_credentials(self.get_option("access_key_id"), self.get_option("access_key_secret"),
                                        self.get_option("security_token"), self.get_option("profile"),
                                        self.get_option("profile_file"))
        except EcsError as exc:
            raise AnsibleError(str(exc)) from None
        regions = [str(r) for r in self.get_option("regions") or []] or ([creds.region] if creds.region else [])
        if not regions:
            raise AnsibleError("no region to list: set `regions` (e.g. [cn-hangzhou]) or ALICLOUD_REGION")
        fingerprint = self._query_fingerprint(regions, filters, creds.access_key_id)

        user_cache = bool(self.get_option("cache"))
        cache_key = self.get_cache_key(path)
        payload = None
        if user_cache and use_cache:
            try:
                cached = self._cache[cache_key]
            except KeyError:
                cached = None
            if isinstance(cached, Mapping) and cached.get("format") == CACHE_FORMAT and \
                    cached.get("query") == fingerprint:
                payload = cached.get("regions")
        if payload is None:
            try:
                payload = self._fetch(regions, filters, creds)
            except EcsError as exc:
                raise AnsibleError(str(exc)) from None
            if user_cache:
                self._cache[cache_key] = {"format": CACHE_FORMAT, "query": fingerprint, "regions": payload}
        return payload

    # -- inventory -----------------------------------------------------------------------------------------------

    def _populate(self, payload: Mapping[str, list[dict[str, Any]]]) -> None:
        table = self._type_table()
        prefs = self._hostnames()
        strict = self.get_option("strict")
        compose = self.get_option("compose")
        groups = self.get_option("groups")
        keyed = self.get_option("keyed_groups")
        with_defaults = self.get_option("default_groups")
        cluster = self.inventory.add_group(self.get_option("cluster_group"))
        unknown_types: dict[str, str] = {}

        instances = [(region, inst) for region, items in payload.items() for inst in items]
        by_id = {id(inst): region for region, inst in instances}
        for name, inst in assign_names((inst for _unused, inst in instances), prefs):
            hv = host_vars(inst, by_id[id(inst)], table)
            if not hv.pop("scc_instance_type_known"):
                unknown_types.setdefault(hv["scc_instance_type"], name)
            if hv["ansible_host"] is None:
                del hv["ansible_host"]
                display.warning(f"scc inventory: {name} has no private IP; set ansible_host for it with `compose`")
            host = self.inventory.add_host(make_unsafe(name), group=cluster)
            hv = make_unsafe(hv)
            for key, value in hv.items():
                self.inventory.set_variable(host, key, value)
            if with_defaults:
                for group in default_groups(hv):
                    self.inventory.add_child(self.inventory.add_group(group), host)
            self._set_composite_vars(compose, hv, host, strict=strict)
            self._add_host_to_composed_groups(groups, hv, host, strict=strict)
            self._add_host_to_keyed_groups(keyed, hv, host, strict=strict)
        for itype, example in sorted(unknown_types.items()):
            display.warning(f"scc inventory: instance type {itype!r} (e.g. {example}) is not in the instance type "
                            "table: GPU facts come from the API; add it under `instance_types` with gpu_count, "
                            "gpu_model, gpu_arch and rdma")

    def parse(self, inventory: Any, loader: Any, path: str, cache: bool = True) -> None:
        super().parse(inventory, loader, path, cache)
        if not path.endswith((".scc.yml", ".scc.yaml")):
            self._check_config(path)
        self._read_config_data(path)
        self._check_config(path)
        try:
            self._populate(self._payload(path, cache))
        except NodeError as exc:
            raise AnsibleError(str(exc)) from None
