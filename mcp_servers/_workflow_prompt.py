"""A workflow as prompt text: a playbook from `workflows/` written out for one subject.

Each specialist serves its playbook as an MCP prompt named after the workflow. The steps, what each one
proves and where a person must approve come from the workflow YAML, the same file the runtime executes
and the agents read, so a prompt cannot drift from the playbook; a server adds only its closing lines
(which tool runs the steps, how to report the result).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["playbook_text"]

GATE_NOTE = (
    "Gate: runs only after the person approves the exact command on {where}; never run it yourself, "
    "and report it as not run until then"
)


def playbook_text(
    workflow_name: str, subject: str, closing: Sequence[str] = (), *, gate_where: str = "their TPU VM"
) -> str:
    """Title and subject, every step numbered with what it proves and its gate, then `closing`."""
    from tpu_runtime.workflow import load_workflow

    workflow = load_workflow(workflow_name)
    lines = [
        f"{workflow.title}: {subject}",
        "",
        f"Follow the '{workflow.name}' playbook (workflows/{workflow.name}.yaml), step by step:",
    ]
    for number, step in enumerate(workflow.steps, 1):
        line = f"{number}. {step.title}"
        if step.proves:
            line += f". Proves: {step.proves}"
        if step.gate == "approval":
            line += ". " + GATE_NOTE.format(where=gate_where)
        lines.append(line)
    if closing:
        lines += ["", *closing]
    return "\n".join(lines)
