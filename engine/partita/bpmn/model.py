"""The executable model: what the engine needs of a BPMN process, validated and immutable.

Expressions are kept as written (`=` prefix for FEEL, anything else static); the FEEL package
compiles them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from partita.elements import BpmnElementType, BpmnEventType


@dataclass(frozen=True, slots=True)
class IoMapping:
    """`zeebe:input` / `zeebe:output`: evaluate `source`, store it as `target`."""

    source: str
    target: str


@dataclass(frozen=True, slots=True)
class SequenceFlow:
    id: str
    source: str
    target: str
    condition: str | None = None
    """The condition expression (FEEL with a leading `=`), or None for an unconditional flow."""


@dataclass(frozen=True, slots=True)
class MultiInstance:
    """`bpmn:multiInstanceLoopCharacteristics` with `zeebe:loopCharacteristics`."""

    sequential: bool
    input_collection: str
    """A FEEL expression yielding a list."""
    input_element: str = ""
    output_collection: str = ""
    output_element: str = ""
    completion_condition: str = ""


@dataclass(frozen=True, slots=True)
class ExecutionListener:
    """`zeebe:executionListener`: a job of `job_type` (static or FEEL) the element waits for
    when it starts (after its input mappings) or ends (after its output mappings)."""

    job_type: str
    retries: str = "3"


@dataclass(frozen=True, slots=True)
class TaskListener:
    """`zeebe:taskListener`: a job of `job_type` (static or FEEL) a Zeebe user task's transition
    waits for; `event_type` is creating, assigning, updating, completing or canceling."""

    event_type: str
    job_type: str
    retries: str = "3"


@dataclass(frozen=True, slots=True)
class FlowNode:
    """A start or end event, task, manual task or parallel gateway: nothing beyond the flow."""

    id: str
    element_type: BpmnElementType
    name: str = ""
    event_type: BpmnEventType = BpmnEventType.UNSPECIFIED
    incoming: tuple[str, ...] = ()
    outgoing: tuple[str, ...] = ()
    inputs: tuple[IoMapping, ...] = ()
    outputs: tuple[IoMapping, ...] = ()
    scope: str = ""
    """The id of the process or subprocess the element is directly in."""
    multi_instance: MultiInstance | None = None
    start_listeners: tuple[ExecutionListener, ...] = ()
    end_listeners: tuple[ExecutionListener, ...] = ()
    for_compensation: bool = False
    """A compensation handler (`isForCompensation`): activated only by compensation."""


@dataclass(frozen=True, slots=True)
class JobWorkerElement(FlowNode):
    """An element whose work is a job (`zeebe:taskDefinition`): a service, send, script or
    business rule task, a message intermediate throw or end event, or a user task without
    `zeebe:userTask` (Zeebe's job-based user task, of type `io.camunda.zeebe:userTask`)."""

    job_type: str = ""
    """`zeebe:taskDefinition type`: static text or a FEEL expression."""
    retries: str = "3"
    headers: tuple[tuple[str, str], ...] = ()
    evaluated_headers: tuple[tuple[str, str], ...] = ()
    """Headers whose values are evaluated when the job is created (static text or FEEL): a
    job-based user task's assignment, schedule and form key."""


@dataclass(frozen=True, slots=True)
class UserTask(FlowNode):
    """A Zeebe user task (`zeebe:userTask`): a USER_TASK the engine keeps until a person's
    client completes it. Each property is static text or FEEL, evaluated on activation."""

    assignee: str = ""
    candidate_groups: str = ""
    """Static `a, b` or FEEL yielding a list of strings (so `candidate_users`)."""
    candidate_users: str = ""
    due_date: str = ""
    follow_up_date: str = ""
    priority: str = "50"
    external_form_reference: str = ""
    form_id: str = ""
    """A deployed form's id (static or FEEL), resolved when the task is created."""
    form_binding: str = "latest"
    """Which version of the form: latest, deployment (the process's own) or versionTag."""
    form_version_tag: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    task_listeners: tuple[TaskListener, ...] = ()

    def listeners_of(self, event_type: str) -> tuple[TaskListener, ...]:
        """The task listeners of one event type, in model order."""
        return tuple(t for t in self.task_listeners if t.event_type == event_type)


@dataclass(frozen=True, slots=True)
class BusinessRuleTask(FlowNode):
    """A business rule task with `zeebe:calledDecision`: evaluates a deployed decision when
    it activates and sets its output as `result_variable`."""

    decision_id: str = ""
    """Static text or FEEL yielding the decision's id."""
    result_variable: str = ""
    binding: str = "latest"
    """Which version: latest, deployment (the process's own) or versionTag."""
    version_tag: str = ""


@dataclass(frozen=True, slots=True)
class ScriptTask(FlowNode):
    """A script task with `zeebe:script`: the FEEL `expression` is evaluated when the task
    activates and its result set as `result_variable` (merged as a job's variables are)."""

    expression: str = ""
    result_variable: str = ""


@dataclass(frozen=True, slots=True)
class ExclusiveGateway(FlowNode):
    default_flow: str | None = None


@dataclass(frozen=True, slots=True)
class InclusiveGateway(FlowNode):
    """Forks into every outgoing flow whose condition holds (the default flow when none does)
    and, with several incoming flows, joins the tokens that can still arrive."""

    default_flow: str | None = None


@dataclass(frozen=True, slots=True)
class MessageDefinition:
    """A `bpmn:message`: its name and `zeebe:subscription correlationKey` (static or FEEL);
    the correlation key is empty for message start events."""

    name: str
    correlation_key: str = ""


@dataclass(frozen=True, slots=True)
class TimerDefinition:
    """A `bpmn:timerEventDefinition`: `timeDuration`, `timeDate` or `timeCycle` (ISO-8601 text
    or a FEEL expression that yields it)."""

    kind: str
    """"duration", "date" or "cycle"."""
    expression: str


@dataclass(frozen=True, slots=True)
class ErrorDefinition:
    """A `bpmn:error` caught or thrown by an event; an empty code on a catch event catches
    every error."""

    code: str


@dataclass(frozen=True, slots=True)
class SignalDefinition:
    """A `bpmn:signal`: its name (static or FEEL), caught or broadcast by an event."""

    name: str


@dataclass(frozen=True, slots=True)
class EscalationDefinition:
    """A `bpmn:escalation` thrown or caught by an event; an empty code on a catch event
    catches every escalation."""

    code: str


@dataclass(frozen=True, slots=True)
class SubProcess(FlowNode):
    """An embedded subprocess (its own variable scope) or, `triggered_by_event`, an event
    subprocess started by its message, timer, error, signal or escalation start event."""

    start_event: str = ""
    triggered_by_event: bool = False


INNER_INSTANCE_SUFFIX = "#innerInstance"
"""An ad-hoc subprocess's inner instances are elements `<its id>#innerInstance` (Zeebe 8.8)."""


@dataclass(frozen=True, slots=True)
class AdHocSubProcess(FlowNode):
    """An ad-hoc subprocess (`zeebe:adHoc`): activates the inner elements (those without
    incoming flows) its `activeElementsCollection` names, and completes once none is active or
    its `completionCondition` holds (cancelling the others when `cancel_remaining`)."""

    active_elements: str = ""
    """A FEEL expression yielding the ids of the elements to activate ("" activates none)."""
    completion_condition: str = ""
    cancel_remaining: bool = True
    job_type: str = ""
    """Job worker mode (`zeebe:taskDefinition`): a job of this type decides what to activate."""
    retries: str = "3"
    headers: tuple[tuple[str, str], ...] = ()
    output_collection: str = ""
    """`zeebe:adHoc outputCollection`: a local list gathering `output_element` of each path."""
    output_element: str = ""

    @property
    def inner_instance_id(self) -> str:
        """The element id of the inner instances each activated element runs in."""
        return self.id + INNER_INSTANCE_SUFFIX

    def activatable(self, model: Process) -> dict[str, FlowNode]:
        """The inner elements a job or the active elements may activate: those without
        incoming flows (boundary events aside)."""
        return {
            e.id: e
            for e in model.elements.values()
            if e.scope == self.id
            and not e.incoming
            and e.element_type is not BpmnElementType.BOUNDARY_EVENT
        }


@dataclass(frozen=True, slots=True)
class CallActivity(FlowNode):
    """`zeebe:calledElement`: start the latest version of another process and wait for it."""

    process_id: str = ""
    """Static text or a FEEL expression."""
    propagate_all_child_variables: bool = True
    propagate_all_parent_variables: bool = True


@dataclass(frozen=True, slots=True)
class EventNode(FlowNode):
    """An element that waits for a message or a timer: a message or timer start event, an
    intermediate catch event, a boundary event or a receive task."""

    message: MessageDefinition | None = None
    timer: TimerDefinition | None = None
    error: ErrorDefinition | None = None
    escalation: EscalationDefinition | None = None
    signal: SignalDefinition | None = None
    attached_to: str | None = None
    """Boundary events: the activity they are attached to."""
    compensation: bool = False
    """A compensation boundary, intermediate throw or end event."""
    compensation_handler: str = ""
    """A compensation boundary event: its handler (the target of its association)."""
    activity_ref: str = ""
    """A compensation throw or end event: the one activity it compensates ("" for all)."""
    interrupting: bool = True
    """Boundary events (`cancelActivity`) and start events of event subprocesses."""

    @property
    def waits_for_something(self) -> bool:
        """A message, timer or signal: what an element instance opens a subscription for."""
        return (self.message or self.timer or self.signal) is not None


@dataclass(frozen=True, slots=True)
class LinkEvent(FlowNode):
    """A link intermediate throw or catch event: a throw goes on at the catch of the same
    `link_name` in its scope (`target`, set when the process is validated)."""

    link_name: str = ""
    target: str = ""


@dataclass(frozen=True, slots=True)
class EventBasedGateway(FlowNode):
    """Waits for the first of the catch events its flows lead to."""


_SELF_WAITING = frozenset({BpmnElementType.INTERMEDIATE_CATCH_EVENT, BpmnElementType.RECEIVE_TASK})
"""Elements that wait for their own message, timer or signal (a throw event broadcasts its)."""


@dataclass(frozen=True, slots=True)
class Process:
    """One executable `<bpmn:process>`."""

    id: str
    name: str
    elements: dict[str, FlowNode] = field(default_factory=dict)
    flows: dict[str, SequenceFlow] = field(default_factory=dict)
    start_event: str = ""
    """The id of the none start event a created instance starts from ("" when none)."""
    event_starts: tuple[str, ...] = ()
    """Message and timer start events."""
    boundaries: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Activity id -> the boundary events attached to it."""
    start_listeners: tuple[ExecutionListener, ...] = ()
    end_listeners: tuple[ExecutionListener, ...] = ()
    compensable: bool = False
    """Some activity has a compensation boundary event (what completes may leave a
    subscription)."""
    cancel_listened: bool = False
    """Some user task has canceling task listeners: terminating it waits for their jobs, so a
    scope may be asked to complete while a child still terminates."""
    _events: dict[str, list[EventNode]] = field(default_factory=dict, compare=False, repr=False)
    """`events_of` answers, computed once per element (the model never changes)."""
    _reach: dict[str, frozenset[str]] = field(default_factory=dict, compare=False, repr=False)
    """`reachable_flows` answers, computed once per (element, gateway)."""
    _joins: dict[str, list[InclusiveGateway]] = field(
        default_factory=dict, compare=False, repr=False
    )
    _inner: dict[str, FlowNode] = field(default_factory=dict, compare=False, repr=False)
    """The ad-hoc subprocesses' inner instances, made when first asked for."""

    def element(self, element_id: str) -> FlowNode:
        found = self.elements.get(element_id)
        return found if found is not None else self._inner_instance(element_id)

    def _inner_instance(self, element_id: str) -> FlowNode:
        """The inner instance of an ad-hoc subprocess (`<id>#innerInstance`), which the XML
        does not have: the scope each activated element runs in. KeyError for anything else."""
        found = self._inner.get(element_id)
        if found is not None:
            return found
        owner = self.elements.get(element_id.removesuffix(INNER_INSTANCE_SUFFIX))
        if not element_id.endswith(INNER_INSTANCE_SUFFIX) or not isinstance(owner, AdHocSubProcess):
            raise KeyError(element_id)
        inner = FlowNode(
            element_id, BpmnElementType.AD_HOC_SUB_PROCESS_INNER_INSTANCE, scope=owner.id
        )
        self._inner[element_id] = inner
        return inner

    def event_subprocesses(self, scope_id: str) -> list[SubProcess]:
        return [
            e
            for e in self.elements.values()
            if isinstance(e, SubProcess) and e.triggered_by_event and e.scope == scope_id
        ]

    def boundary_events(self, element_id: str) -> list[EventNode]:
        """The message and timer boundary events of an activity (a multi-instance body waits
        for these; its inner instances do not)."""
        found = [self.elements[b] for b in self.boundaries.get(element_id, ())]
        return [e for e in found if isinstance(e, EventNode) and e.waits_for_something]

    def events_of(self, element_id: str) -> list[EventNode]:
        """The message and timer events an active element waits for: itself (catch event,
        receive task), its boundary events, the catch events after an event-based gateway,
        and the start events of the event subprocesses of a scope (process or subprocess)."""
        found = self._events.get(element_id)
        if found is None:
            found = self._events[element_id] = self._find_events(element_id)
        return found

    def _find_events(self, element_id: str) -> list[EventNode]:
        starts = [
            self.elements[sub.start_event]
            for sub in self.event_subprocesses(element_id)
            if sub.start_event
        ]
        scoped = [e for e in starts if isinstance(e, EventNode) and e.waits_for_something]
        if element_id == self.id:
            return scoped
        element = self.elements[element_id]
        if isinstance(element, EventBasedGateway):
            targets = [self.elements[self.flows[f].target] for f in element.outgoing]
            return [t for t in targets if isinstance(t, EventNode)]
        found = [self.elements[b] for b in self.boundaries.get(element_id, ())]
        events = [e for e in found if isinstance(e, EventNode) and e.waits_for_something]
        events += scoped
        if (
            isinstance(element, EventNode)
            and element.attached_to is None
            and element.element_type in _SELF_WAITING
            and element.waits_for_something
        ):
            events.insert(0, element)
        return events

    def inclusive_joins(self, scope_id: str) -> list[InclusiveGateway]:
        """The inclusive gateways of a scope with more than one incoming flow."""
        found = self._joins.get(scope_id)
        if found is None:
            found = self._joins[scope_id] = [
                e
                for e in self.elements.values()
                if isinstance(e, InclusiveGateway) and e.scope == scope_id and len(e.incoming) > 1
            ]
        return found

    def reachable_flows(self, element_id: str, gateway_id: str) -> frozenset[str]:
        """The incoming flows of `gateway_id` a token at `element_id` can still take: through
        outgoing flows, boundary events and links, never through the gateway itself."""
        cache_key = f"{element_id}\x00{gateway_id}"
        found = self._reach.get(cache_key)
        if found is None:
            found = self._reach[cache_key] = self._walk(element_id, gateway_id)
        return found

    def _walk(self, start: str, gateway_id: str) -> frozenset[str]:
        reached: set[str] = set()
        seen = {start}
        todo = [start]
        while todo:
            element = self.elements[todo.pop()]
            nexts = [self.flows[f] for f in element.outgoing]
            successors = [flow.target for flow in nexts]
            successors += list(self.boundaries.get(element.id, ()))
            target = getattr(element, "target", "")
            if isinstance(target, str) and target in self.elements:  # a link throw's catch
                successors.append(target)
            reached.update(flow.id for flow in nexts if flow.target == gateway_id)
            for successor in successors:
                if successor != gateway_id and successor not in seen:
                    seen.add(successor)
                    todo.append(successor)
        return frozenset(reached)

    def outgoing(self, element_id: str) -> list[SequenceFlow]:
        return [self.flows[f] for f in self.elements[element_id].outgoing]
