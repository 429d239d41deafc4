"""kube 1.20's ``ValidateVolumes``, ``ValidateVolumeMounts`` and ``ValidateVolumeDevices`` for a Pod spec.

A real kube-apiserver refuses a volume with two sources, a ``configMap`` volume without a name, an item path of
``../x``, a ``defaultMode`` of 1000, a ``persistentVolumeClaim`` without a claim name, or a mount whose
``subPath`` is absolute; the dev server stored them, so a manifest that works on the dev plane could fail on
Karmada's API server. Covered, in kube's order and with its messages (each checked on the refplane):

- each volume: exactly one source (every in-tree source counts; kube names the extra ones Forbidden, in its
  own order and spelling: ``cephFS``, ``downwarAPI``), then its name (required, a DNS-1123 label, unique). A
  volume refused so is unknown to the mounts;
- the sources a user plausibly writes: ``emptyDir`` (size limit not negative), ``hostPath`` (path, no ``..``,
  type), ``secret``/``configMap`` (name, default mode, items: key, relative path without ``..``, mode),
  ``persistentVolumeClaim`` (claim name), ``nfs`` (server, absolute path), ``downwardAPI`` (each file's path,
  field or resource selector, mode), ``projected`` (default mode; each source: names, items, one kind, paths
  not repeated across sources, token expiration within 10 minutes and 2^32 seconds) and ``csi`` (driver name,
  secret reference), kube's odd field paths included (``downwardAPI.path`` without the item's index,
  ``csi.nodePublishSecretRef .name`` with its space);
- each mount: the volume known, a path, each path once, no overlap with the block devices, ``subPath`` and
  ``subPathExpr`` relative without ``..`` and not both, the propagation mode (Bidirectional only when
  privileged); each block device: a persistent volume claim's, named once, its path given, once, without ``..``.

Not covered: the contents of the other in-tree sources (iscsi, rbd, cloud disks...). ``ephemeral`` is ignored:
1.20 drops it (its feature gate is off), so a volume with only that has no source.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kube_api.quantity import parse_quantity
from kube_api.validation import go_quote, is_dns1123_label, is_dns1123_subdomain

from .env_validation import VOLUME_FIELD_PATHS, field_selector_causes, resource_selector_causes
from .errors import Cause
from .validation import child, entries, go_int

VOLUME_SOURCES: Final = (
    ("emptyDir", "emptyDir"), ("hostPath", "hostPath"), ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"), ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"), ("nfs", "nfs"), ("iscsi", "iscsi"), ("glusterfs", "glusterfs"), ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"), ("rbd", "rbd"), ("cinder", "cinder"), ("cephfs", "cephFS"),
    ("quobyte", "quobyte"), ("downwardAPI", "downwarAPI"), ("fc", "fc"), ("flexVolume", "flexVolume"),
    ("configMap", "configMap"), ("azureFile", "azureFile"), ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"), ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"), ("storageos", "storageos"), ("projected", "projected"), ("scaleIO", "scaleIO"),
    ("csi", "csi"))
"""``validateVolumeSource``'s sources in the order it looks at them: (JSON key, the name its Forbidden cause gives
an extra one)."""
FILE_MODE_RULE: Final = "must be a number between 0 and 0777 (octal), both inclusive"
HOST_PATH_TYPES: Final = ("", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate",
                          "Socket")
MOUNT_PROPAGATIONS: Final = ("Bidirectional", "HostToContainer", "None")
MAX_TOKEN_SECONDS: Final = 1 << 32
MIN_TOKEN_SECONDS: Final = 10 * 60
MAX_CSI_DRIVER_NAME: Final = 63


def volume_causes(pod: Mapping[str, Any], field: str) -> tuple[dict[str, Mapping[str, Any]], list[Cause]]:
    """``ValidateVolumes``: the volumes found valid (by name), and the causes of the others."""
    valid: dict[str, Mapping[str, Any]] = {}
    causes: list[Cause] = []
    for i, volume in entries(pod, "volumes"):
        at = f"{field}.volumes[{i}]"
        name = str(volume.get("name") or "")
        found = _source(volume, at)
        if not name:
            found.append(Cause.required(f"{at}.name"))
        found.extend(Cause.invalid(f"{at}.name", go_quote(name), msg) for msg in (is_dns1123_label(name) if name
                                                                                  else []))
        if name in valid:
            found.append(Cause.duplicate(f"{at}.name", go_quote(name)))
        if found:
            causes.extend(found)
        else:
            valid[name] = volume
    return valid, causes


def _source(volume: Mapping[str, Any], field: str) -> list[Cause]:
    """``validateVolumeSource``: the first source given is validated, each further one Forbidden."""
    given = [(key, shown) for key, shown in VOLUME_SOURCES if isinstance(volume.get(key), Mapping)]
    if not given:
        return [Cause.required(field, "must specify a volume type")]
    (first, _), *others = given
    check = SOURCE_CHECKS.get(first)
    causes = check(volume[first], f"{field}.{first}") if check else []
    for _, shown in others:
        causes.append(Cause.forbidden(f"{field}.{shown}", "may not specify more than 1 volume type"))
    return causes


def _empty_dir(source: Mapping[str, Any], field: str) -> list[Cause]:
    limit = source.get("sizeLimit")
    try:
        negative = limit is not None and parse_quantity(limit) < 0
    except (TypeError, ValueError):  # the decoder's to refuse
        negative = False
    return [Cause.forbidden(f"{field}.sizeLimit", "SizeLimit field must be a valid resource quantity")] \
        if negative else []


def _host_path(source: Mapping[str, Any], field: str) -> list[Cause]:
    path = str(source.get("path") or "")
    if not path:
        return [Cause.required(f"{field}.path")]
    causes = _no_backsteps(path, f"{field}.path")
    kind = source.get("type")
    if kind is not None and kind not in HOST_PATH_TYPES:
        causes.append(Cause.not_supported(f"{field}.type", go_quote(str(kind)), HOST_PATH_TYPES))
    return causes


def _secret(source: Mapping[str, Any], field: str) -> list[Cause]:
    causes = [] if source.get("secretName") else [Cause.required(f"{field}.secretName")]
    return causes + _mode(source, "defaultMode", field) + _items(source, field)


def _config_map(source: Mapping[str, Any], field: str) -> list[Cause]:
    causes = [] if source.get("name") else [Cause.required(f"{field}.name")]
    return causes + _mode(source, "defaultMode", field) + _items(source, field)


def _claim(source: Mapping[str, Any], field: str) -> list[Cause]:
    return [] if source.get("claimName") else [Cause.required(f"{field}.claimName")]


def _nfs(source: Mapping[str, Any], field: str) -> list[Cause]:
    path = str(source.get("path") or "")
    causes = [Cause.required(f"{field}.{key}") for key in ("server", "path") if not source.get(key)]
    if not path.startswith("/"):
        causes.append(Cause.invalid(f"{field}.path", go_quote(path), "must be an absolute path"))
    return causes


def _downward_api(source: Mapping[str, Any], field: str) -> list[Cause]:
    causes = _mode(source, "defaultMode", field)
    for _, file in entries(source, "items"):
        causes.extend(_downward_file(file, field))
    return causes


def _downward_file(file: Mapping[str, Any], field: str) -> list[Cause]:
    """``validateDownwardAPIVolumeFile``: its causes are on ``field`` itself, the file's index is not named."""
    path = str(file.get("path") or "")
    causes = [] if path else [Cause.required(f"{field}.path")]
    causes.extend(_local_non_reserved_path(path, f"{field}.path"))
    field_ref, resource_ref = file.get("fieldRef"), file.get("resourceFieldRef")
    if isinstance(field_ref, Mapping):
        causes.extend(field_selector_causes(field_ref, VOLUME_FIELD_PATHS, f"{field}.fieldRef"))
        if isinstance(resource_ref, Mapping):
            causes.append(Cause.invalid(field, '"resource"', "fieldRef and resourceFieldRef can not be specified "
                                                             "simultaneously"))
    elif isinstance(resource_ref, Mapping):
        causes.extend(resource_selector_causes(resource_ref, f"{field}.resourceFieldRef", volume=True))
    else:
        causes.append(Cause.required(field, "one of fieldRef and resourceFieldRef is required"))
    return causes + _mode(file, "mode", field)


def _projected(source: Mapping[str, Any], field: str) -> list[Cause]:
    """``validateProjectedVolumeSource``: the default mode, then each source (the paths of all of them unique)."""
    causes = _mode(source, "defaultMode", field)
    paths: set[str] = set()
    for i, projection in entries(source, "sources"):
        at = f"{field}.sources[{i}]"
        kinds = 0
        for kind in ("secret", "configMap"):
            if isinstance(projection.get(kind), Mapping):
                kinds += 1
                causes.extend(_projected_object(projection[kind], f"{at}.{kind}", field, paths))
        if isinstance(projection.get("downwardAPI"), Mapping):
            kinds += 1
            for _, file in entries(projection["downwardAPI"], "items"):
                causes.extend(_downward_file(file, f"{at}.downwardAPI"))
                causes.extend(_unique_path(str(file.get("path") or ""), str(file.get("path") or ""), field, paths))
        if isinstance(projection.get("serviceAccountToken"), Mapping):
            kinds += 1
            causes.extend(_token(projection["serviceAccountToken"], f"{at}.serviceAccountToken", field))
        if kinds > 1:
            causes.append(Cause.forbidden(at, "may not specify more than 1 volume type"))
    return causes


def _projected_object(source: Mapping[str, Any], field: str, volume: str, paths: set[str]) -> list[Cause]:
    """A projected Secret or ConfigMap: its name, and each item (a path seen before is refused on the volume,
    showing the object's name)."""
    name = str(source.get("name") or "")
    causes = [] if name else [Cause.required(f"{field}.name")]
    for i, item in entries(source, "items"):
        causes.extend(_key_to_path(item, f"{field}.items[{i}]"))
        causes.extend(_unique_path(str(item.get("path") or ""), name, volume, paths))
    return causes


def _unique_path(path: str, shown: str, volume: str, paths: set[str]) -> list[Cause]:
    if not path:
        return []
    if path in paths:
        return [Cause.invalid(volume, go_quote(shown), "conflicting duplicate paths")]
    paths.add(path)
    return []


def _token(token: Mapping[str, Any], field: str, volume: str) -> list[Cause]:
    """A service account token: its expiration (defaulted to an hour) and its path (kube reports a missing one on
    the volume's ``path``)."""
    seconds = go_int(token.get("expirationSeconds"))
    causes = []
    if seconds < MIN_TOKEN_SECONDS:
        causes.append(Cause.invalid(f"{field}.expirationSeconds", str(seconds),
                                    "may not specify a duration less than 10 minutes"))
    if seconds > MAX_TOKEN_SECONDS:
        causes.append(Cause.invalid(f"{field}.expirationSeconds", str(seconds),
                                    "may not specify a duration larger than 2^32 seconds"))
    if not token.get("path"):
        causes.append(Cause.required(f"{volume}.path"))
    return causes


def _csi(source: Mapping[str, Any], field: str) -> list[Cause]:
    """``validateCSIVolumeSource``: ``ValidateCSIDriverName``, then the secret reference (kube's field paths)."""
    driver = str(source.get("driver") or "")
    causes = [] if driver else [Cause.required(f"{field}.driver")]
    if len(driver) > MAX_CSI_DRIVER_NAME:
        causes.append(Cause("FieldValueTooLong", f"Too long: must have at most {MAX_CSI_DRIVER_NAME} bytes",
                            f"{field}.driver"))
    causes.extend(Cause.invalid(f"{field}.driver", go_quote(driver), msg)
                  for msg in is_dns1123_subdomain(driver.lower()))
    secret = source.get("nodePublishSecretRef")
    if isinstance(secret, Mapping):
        name = str(secret.get("name") or "")
        if not name:
            causes.append(Cause.required(f"{field}.nodePublishSecretRef .name"))
        causes.extend(Cause.invalid(f"{field}.name", go_quote(name), msg)
                      for msg in (is_dns1123_subdomain(name) if name else []))
    return causes


SOURCE_CHECKS: Final = {"emptyDir": _empty_dir, "hostPath": _host_path, "secret": _secret, "configMap": _config_map,
                        "persistentVolumeClaim": _claim, "nfs": _nfs, "downwardAPI": _downward_api,
                        "projected": _projected, "csi": _csi}
"""The sources whose contents are validated; any other given alone is taken as it is."""


def _items(source: Mapping[str, Any], field: str) -> list[Cause]:
    return [cause for i, item in entries(source, "items") for cause in _key_to_path(item, f"{field}.items[{i}]")]


def _key_to_path(item: Mapping[str, Any], field: str) -> list[Cause]:
    """``validateKeyToPath``: a key, a relative path without ``..``, a file mode."""
    path = str(item.get("path") or "")
    causes = [Cause.required(f"{field}.{key}") for key in ("key", "path") if not item.get(key)]
    return causes + _local_non_reserved_path(path, f"{field}.path") + _mode(item, "mode", field)


def _mode(parent: Mapping[str, Any], key: str, field: str) -> list[Cause]:
    mode = parent.get(key)
    if isinstance(mode, int) and not isinstance(mode, bool) and not 0 <= mode <= 0o777:
        return [Cause.invalid(f"{field}.{key}", str(mode), FILE_MODE_RULE)]
    return []


def _no_backsteps(path: str, field: str) -> list[Cause]:
    """``validatePathNoBacksteps``: no ``..`` element (one cause however many)."""
    return [Cause.invalid(field, go_quote(path), "must not contain '..'")] if ".." in path.split("/") else []


def _local_descending_path(path: str, field: str) -> list[Cause]:
    """``validateLocalDescendingPath``: relative, without ``..``."""
    causes = [Cause.invalid(field, go_quote(path), "must be a relative path")] if path.startswith("/") else []
    return causes + _no_backsteps(path, field)


def _local_non_reserved_path(path: str, field: str) -> list[Cause]:
    """``validateLocalNonReservedPath``: a descending path not starting with ``..`` (``..x`` too)."""
    causes = _local_descending_path(path, field)
    if path.startswith("..") and not path.startswith("../"):
        causes.append(Cause.invalid(field, go_quote(path), "must not start with '..'"))
    return causes


def mount_causes(container: Mapping[str, Any], field: str, volumes: Mapping[str, Mapping[str, Any]]) -> list[Cause]:
    """``ValidateVolumeMounts`` (``subPath``, ``subPathExpr`` and ``mountPropagation`` causes on the list's field
    path, without the mount's index, as kube reports them)."""
    devices = {str(d.get("name") or ""): str(d.get("devicePath") or "") for _, d in entries(container,
                                                                                             "volumeDevices")}
    privileged = child(container, "securityContext").get("privileged") is True
    causes: list[Cause] = []
    paths: set[str] = set()
    for i, mount in entries(container, "volumeMounts"):
        at = f"{field}[{i}]"
        name, path = str(mount.get("name") or ""), str(mount.get("mountPath") or "")
        if not name:
            causes.append(Cause.required(f"{at}.name"))
        if name not in volumes:
            causes.append(Cause.not_found(f"{at}.name", go_quote(name)))
        if not path:
            causes.append(Cause.required(f"{at}.mountPath"))
        if path in paths:
            causes.append(Cause.invalid(f"{at}.mountPath", go_quote(path), "must be unique"))
        paths.add(path)
        if name in devices:
            causes.append(Cause.invalid(f"{at}.name", go_quote(name), "must not already exist in volumeDevices"))
        if path in devices.values():
            causes.append(Cause.invalid(f"{at}.mountPath", go_quote(path),
                                        "must not already exist as a path in volumeDevices"))
        causes.extend(_sub_paths(mount, at, field))
        causes.extend(_propagation(mount.get("mountPropagation"), f"{field}.mountPropagation", privileged))
    return causes


def _sub_paths(mount: Mapping[str, Any], at: str, field: str) -> list[Cause]:
    sub_path, expression = str(mount.get("subPath") or ""), str(mount.get("subPathExpr") or "")
    causes = _local_descending_path(sub_path, f"{field}.subPath") if sub_path else []
    if expression:
        if sub_path:
            causes.append(Cause.invalid(f"{at}.subPathExpr", go_quote(expression),
                                        "subPathExpr and subPath are mutually exclusive"))
        causes.extend(_local_descending_path(expression, f"{field}.subPathExpr"))
    return causes


def _propagation(mode: Any, field: str, privileged: bool) -> list[Cause]:
    """``validateMountPropagation``."""
    if mode is None:
        return []
    causes = [] if mode in MOUNT_PROPAGATIONS else [Cause.not_supported(field, go_quote(str(mode)),
                                                                        MOUNT_PROPAGATIONS)]
    if mode == "Bidirectional" and not privileged:
        causes.append(Cause.forbidden(field, "Bidirectional mount propagation is available only to privileged "
                                             "containers"))
    return causes


def device_causes(container: Mapping[str, Any], field: str, volumes: Mapping[str, Mapping[str, Any]]) -> list[Cause]:
    """``ValidateVolumeDevices``: a known persistent volume claim's, each name and path once, the path given and
    without ``..``, none of them a mount's too."""
    mounts = {str(m.get("name") or ""): str(m.get("mountPath") or "") for _, m in entries(container, "volumeMounts")}
    causes: list[Cause] = []
    names: set[str] = set()
    paths: set[str] = set()
    for i, device in entries(container, "volumeDevices"):
        at = f"{field}[{i}]"
        name, path = str(device.get("name") or ""), str(device.get("devicePath") or "")
        if not name:
            causes.append(Cause.required(f"{at}.name"))
        if name in names:
            causes.append(Cause.invalid(f"{at}.name", go_quote(name), "must be unique"))
        if name in volumes and not isinstance(volumes[name].get("persistentVolumeClaim"), Mapping):
            causes.append(Cause.invalid(f"{at}.name", go_quote(name),
                                        "can only use volume source type of PersistentVolumeClaim for block mode"))
        if name not in volumes:
            causes.append(Cause.not_found(f"{at}.name", go_quote(name)))
        if not path:
            causes.append(Cause.required(f"{at}.devicePath"))
        if path in paths:
            causes.append(Cause.invalid(f"{at}.devicePath", go_quote(path), "must be unique"))
        if path and ".." in path.split("/"):
            causes.append(Cause.invalid(f"{at}.devicePath", go_quote(path), "can not contain backsteps ('..')"))
        else:
            paths.add(path)
        if name in mounts:
            causes.append(Cause.invalid(f"{at}.name", go_quote(name), "must not already exist in volumeMounts"))
        if path in mounts.values():
            causes.append(Cause.invalid(f"{at}.devicePath", go_quote(path),
                                        "must not already exist as a path in volumeMounts"))
        if name:
            names.add(name)
    return causes


__all__ = ["VOLUME_SOURCES", "device_causes", "mount_causes", "volume_causes"]
