"""Pure judgement of a call against the deployment's rules: the capability policy
(``[policy.rules]``) and who may decide (``[approvers.rules]``).

No temporalio, no clock, no I/O: unit-tested without a server. Import from the modules; this
package re-exports nothing.
"""
