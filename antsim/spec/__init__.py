"""Input specs: YAML → frozen, validated objects."""

from antsim.spec.arch import ArchSpec, arch_field_paths, arch_from_dict, load_arch
from antsim.spec.yamlio import load_yaml, validate_model

__all__ = ["ArchSpec", "arch_field_paths", "arch_from_dict", "load_arch", "load_yaml", "validate_model"]
