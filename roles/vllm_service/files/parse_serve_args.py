# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Parse a `vllm serve` command line with the installed vLLM's own argument parser, and nothing else.

Run with the venv's python: ``python parse_serve_args.py --model <dir> <flags...>``. Exit 0 when vLLM
accepts the flags (or when this vLLM has no parser module this knows: it prints SKIPPED), else
argparse's exit 2 and its message on stderr. Nothing is loaded, started or written.
"""
import importlib
import sys

# The parser moved between releases (0.20: vllm.entrypoints.openai.cli_args,
# 0.32: vllm.entrypoints.launchers.cli_args): try each, newest last.
PARSER_MODULES = ("vllm.entrypoints.openai.cli_args", "vllm.entrypoints.launchers.cli_args")


def parser_module():
    for name in PARSER_MODULES:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def main(argv):
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils import FlexibleArgumentParser
    module = parser_module()
    if module is None:
        print("SKIPPED: this vLLM has no known serve argument parser module")
        return 0
    args = module.make_arg_parser(FlexibleArgumentParser(prog="vllm serve")).parse_args(argv)
    if hasattr(module, "validate_parsed_serve_args"):
        module.validate_parsed_serve_args(args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
