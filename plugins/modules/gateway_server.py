#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: gateway_server
short_description: Take one server of the inference gateway out of rotation (drain) or put it back (ready)
version_added: "0.3.0"
description:
  - Sets a server's admin state through HAProxy's runtime API on the gateway (delegate to it), as the
    C(inference.gpu_host.inference_gateway) role configures it (C(docs/fleet.md)).
  - O(state=drain) waits until the server has no sessions or O(wait_timeout) passes (then C(settled) is false, not a
    failure); O(state=ready) waits until its health check is C(UP) and fails when it is not in time.
  - A server already in the wanted state is left alone. Each command ends within 10 seconds; an answer that is not
    HAProxy's whole answer fails naming the backend and server.
author: inference.gpu_host contributors (!UNKNOWN)
options:
  backend:
    description: The backend, C(be_<served model name>) (the C(inference.gpu_host.gateway_memberships) filter gives it).
    type: str
    required: true
  server:
    description: The server, the inventory host name (characters HAProxy does not allow become C(_)).
    type: str
    required: true
  state:
    description: The admin state wanted.
    type: str
    choices: [ready, drain, maint]
    required: true
  socket:
    description: The admin socket (C(inference_gateway_admin_socket)).
    type: path
    default: /run/haproxy/admin.sock
  wait_timeout:
    description: Seconds to wait for the sessions to end (drain) or the health check to pass (ready); 0 does not wait.
    type: int
    default: 120
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.CHECK_MODE_DIFF_MODE
  - inference.gpu_host._attributes.PLATFORM_LINUX
attributes:
  check_mode:
    details: Reads the server's state and reports the change it would make.
  diff_mode:
    details: The server's state before and after.
"""

EXAMPLES = r"""
- name: Drain ct129-a at the gateway
  inference.gpu_host.gateway_server:
    backend: be_Qwen3.6-27B
    server: ct129-a
    state: drain
    wait_timeout: 300
  delegate_to: gateway-1
"""

RETURN = r"""
before:
  description: The server before - C(state) (ready, drain, maint), C(status) (HAProxy's, e.g. C(UP), C(DRAIN)), C(sessions).
  returned: always
  type: dict
after:
  description: The server after the change and the wait, as C(before).
  returned: always
  type: dict
waited:
  description: Seconds waited.
  returned: always
  type: float
settled:
  description: Whether the sessions ended (drain) or the health check passed (ready) within O(wait_timeout).
  returned: always
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inference.gpu_host.plugins.module_utils._gateway.runtime import RuntimeApiError, server_step


def main():
    module = AnsibleModule(
        argument_spec=dict(
            backend=dict(type="str", required=True),
            server=dict(type="str", required=True),
            state=dict(type="str", required=True, choices=["ready", "drain", "maint"]),
            socket=dict(type="path", default="/run/haproxy/admin.sock"),
            wait_timeout=dict(type="int", default=120),
        ),
        supports_check_mode=True,
    )
    try:
        result = server_step(module.params, module.check_mode)
        if module._diff:
            result["diff"] = {"before": {"state": result["before"]["state"]}, "after": {"state": module.params["state"]}}
        module.exit_json(**result)
    except RuntimeApiError as exc:
        module.fail_json(msg=str(exc))


if __name__ == "__main__":
    main()
