"""Why something upstream did not become (part of) an episode: the closed set of reasons.

Every reason has one unit, the thing a count of it stands for:

    file     an upstream file or archive (the episodes in it are lost)
    record   an upstream row, line or document (an episode's record, or a metadata line)
    episode  an assembled episode
    step     one action (a Mind2Web row, an AgentNet traj item, a WebLINX turn, a Playwright
             call, a tool-call action, an aggregated Pango step)
    event    a raw input or trace event that would have been part of a step

`BuildStats.drop` takes only members, so a typo is an AttributeError, never a new metric;
dataset_info.json reports `stats.drops` ({reason: count}) and the same counts grouped by unit.
A pointer step whose element cannot be located is not dropped: it keeps its type with a zero
mask and an `UngroundedReason`.
"""

from __future__ import annotations

import enum


class Unit(enum.StrEnum):
    FILE = "file"
    RECORD = "record"
    EPISODE = "episode"
    STEP = "step"
    EVENT = "event"


class DropReason(enum.StrEnum):
    """The value is the name counted in stats.drops; `unit` and `meaning` document it."""

    unit: Unit
    meaning: str

    def __new__(cls, value: str, unit: Unit, meaning: str) -> DropReason:
        member = str.__new__(cls, value)
        member._value_ = value
        member.unit = unit
        member.meaning = meaning
        return member

    # --- files ---------------------------------------------------------------------------
    MISSING_DEMO_ARCHIVE = ("missing_demo_archive", Unit.FILE, "a demo the split index lists has no archive")
    MISSING_REPLAY = ("missing_replay", Unit.FILE, "a demo archive without replay.json")
    MISSING_TRACE = ("missing_trace", Unit.FILE, "a trace archive without trace events")
    TRUNCATED_ARCHIVE = ("truncated_archive", Unit.FILE, "an archive whose directory cannot be read")
    # --- records -------------------------------------------------------------------------
    MALFORMED_JSON = ("malformed_json", Unit.RECORD, "a row, line or document whose JSON does not parse")
    MALFORMED_RECORD = ("malformed_record", Unit.RECORD, "a record missing a required field or mistyped")
    MALFORMED_METADATA_LINE = (
        "malformed_metadata_line",
        Unit.RECORD,
        "a metadata line that does not parse (the join it feeds stays unknown)",
    )
    INCOMPLETE = ("incomplete", Unit.RECORD, "a row its publisher excluded as incomplete")
    MISSING_INPUT_METADATA = (
        "missing_input_metadata",
        Unit.RECORD,
        "the events document a record names is not there",
    )
    UNSAFE_REFERENCE = ("unsafe_reference", Unit.RECORD, "a record's reference leaves the repository folder")
    REFUSED_URL = (
        "refused_url",
        Unit.RECORD,
        "a record's document URL that may not be fetched: not https, a host not allowed, over the size cap",
    )
    DUPLICATE_ID = ("duplicate_id", Unit.RECORD, "a record whose id an earlier record had (another export)")
    UNKNOWN_MESSAGE_TYPE = (
        "unknown_message_type",
        Unit.RECORD,
        "a conversation with a message role or content part type missing or outside the source's table",
    )
    # --- episodes ------------------------------------------------------------------------
    EMPTY_EPISODE = ("empty_episode", Unit.EPISODE, "an episode none of whose steps survived")
    DUPLICATE_ROW = ("duplicate_row", Unit.EPISODE, "an episode identical to an earlier one of its split")
    DUPLICATE_ACROSS_SPLITS = (
        "duplicate_across_splits",
        Unit.EPISODE,
        "a validation episode identical to a train one (content never straddles splits)",
    )
    TASK_NOT_IN_CONFIG = ("task_not_in_config", Unit.EPISODE, "a trace whose task_id the configs lack")
    UNDECODABLE_FRAME = (
        "undecodable_frame",
        Unit.EPISODE,
        "an episode left out of its shard because a stored screenshot would not decode",
    )
    BENCHMARK_OVERLAP = (
        "benchmark_overlap",
        Unit.EPISODE,
        "a train or validation episode identical to a benchmark evaluation one (that one is kept)",
    )
    FRAME_OVER_BUDGET = (
        "frame_over_budget",
        Unit.EPISODE,
        "an episode left out because one of its pages needs more memory to decode than the budget",
    )
    # --- steps ---------------------------------------------------------------------------
    MISSING_SCREENSHOT = ("missing_screenshot", Unit.STEP, "no screenshot where the step needs one")
    BROKEN_SCREENSHOT = ("broken_screenshot", Unit.STEP, "a screenshot its recorder marked broken")
    UNDECODABLE_IMAGE = ("undecodable_image", Unit.STEP, "image bytes that will not decode")
    UNSUPPORTED_IMAGE_FORMAT = ("unsupported_image_format", Unit.STEP, "bytes that are no PNG, JPEG or WebP")
    IMAGE_TOO_LARGE = (
        "image_too_large",
        Unit.STEP,
        "an image larger than anything the source really produces (its declared limit)",
    )
    UNSAFE_SCREENSHOT_REFERENCE = (
        "unsafe_screenshot_reference",
        Unit.STEP,
        "a screenshot reference that leaves the repository folder",
    )
    REFUSED_SCREENSHOT_URL = (
        "refused_screenshot_url",
        Unit.STEP,
        "a screenshot URL that may not be fetched: not https, a host not allowed, over the size cap",
    )
    UNKNOWN_ACTION_VERB = ("unknown_action_verb", Unit.STEP, "an action the source's mapping does not know")
    UNKNOWN_TURN_TYPE = ("unknown_turn_type", Unit.STEP, "a turn whose type is missing or outside the table")
    MALFORMED_STEP = ("malformed_step", Unit.STEP, "a step whose fields are missing, mistyped or not JSON")
    DUPLICATE_STEP = ("duplicate_step", Unit.STEP, "the same step recorded twice")
    EMPTY_CODE = ("empty_code", Unit.STEP, "a step with no action code")
    UNPARSEABLE_CODE = ("unparseable_code", Unit.STEP, "action code that is not Python calls")
    MALFORMED_CODE = ("malformed_code", Unit.STEP, "action code with arguments of the wrong shape")
    COORDINATE_OUT_OF_RANGE = ("coordinate_out_of_range", Unit.STEP, "a coordinate off the screen")
    MULTIPLE_ACTIONS = ("multiple_actions", Unit.STEP, "one step holding two real actions (not guessed)")
    DRAG_WITHOUT_START = ("drag_without_start", Unit.STEP, "a drag whose start was never given")
    DRAG_WITHOUT_COORDINATES = ("drag_without_coordinates", Unit.STEP, "a drag pair without points")
    MISSING_COORDINATES = ("missing_coordinates", Unit.STEP, "a pointer action without its point")
    EMPTY_SCROLL = ("empty_scroll", Unit.STEP, "a scroll that did not move the view")
    FAILED_CALL = ("failed_call", Unit.STEP, "a recorded call that raised an error")
    NO_FRAME = ("no_frame", Unit.STEP, "a call on a page with no screencast frame before it")
    UNATTRIBUTED_CALL = (
        "unattributed_call",
        Unit.STEP,
        "a call its trace ties to no page (no pageId, no snapshot) while the trace records several",
    )
    NON_GUI_TOOL = ("non_gui_tool", Unit.STEP, "a tool call that is no GUI action (a shell, say)")
    NO_ACTION_EQUIVALENT = ("no_action_equivalent", Unit.STEP, "an action the action space cannot express")
    UNSAFE_ARCHIVE_MEMBER = ("unsafe_archive_member", Unit.STEP, "an absolute, `..` or symlink member")
    ENCRYPTED_ARCHIVE_MEMBER = ("encrypted_archive_member", Unit.STEP, "an encrypted archive member")
    UNSUPPORTED_COMPRESSION = ("unsupported_compression", Unit.STEP, "a member compressed other than deflate")
    ARCHIVE_MEMBER_TOO_LARGE = (
        "archive_member_too_large",
        Unit.STEP,
        "a member too large or too compressed for a screenshot",
    )
    TRUNCATED_ARCHIVE_MEMBER = (
        "truncated_archive_member",
        Unit.STEP,
        "a member whose bytes or CRC are wrong",
    )
    # --- events --------------------------------------------------------------------------
    MALFORMED_EVENT = ("malformed_event", Unit.EVENT, "a raw event that is not an object")
    MALFORMED_TRACE_EVENT = ("malformed_trace_event", Unit.EVENT, "a trace line that parses but is no event")
    INVALID_TRACE_VALUE = (
        "invalid_trace_value",
        Unit.EVENT,
        "a trace event whose time, point, box, size or params is mistyped, NaN, infinite, negative or "
        "absurd (that value is not used)",
    )
    MOUSEOVER = ("mouseover", Unit.EVENT, "a mouseover event (pointer noise unless Pango's `hover` option)")
    UNPAIRED_DRAG = ("unpaired_drag", Unit.EVENT, "a drag start or end without its other half")
    MALFORMED_TIMESTAMP = (
        "malformed_timestamp",
        Unit.EVENT,
        "an event whose timestamp is missing, no finite number, negative or absurd",
    )


class UngroundedReason(enum.StrEnum):
    """Why a pointer step kept its type but lost its coordinates (stats.ungrounded_by_reason)."""

    NO_CANDIDATE = "no_candidate"
    HIDDEN_ELEMENT = "hidden_element"
    MALFORMED_BBOX = "malformed_bbox"
    OUTSIDE_SCREENSHOT = "outside_screenshot"
    OUTSIDE_VIEWPORT_X = "outside_viewport_x"
    NO_POINT = "no_point"
    GESTURE_OUTSIDE_FRAME = "gesture_outside_frame"
    NO_VIEWPORT = "no_viewport"  # a point in CSS px on a frame whose CSS size nothing declares


class Drop(Exception):
    """A record, step or file that cannot be used; `reason` is what stats.drops counts.

    The one exception carrying a reason: image, archive and code errors are subclasses."""

    def __init__(self, reason: DropReason, detail: str = "") -> None:
        if not isinstance(reason, DropReason):
            raise TypeError(f"a drop reason must be a DropReason member, not {reason!r}")
        super().__init__(f"{reason.value}: {detail}" if detail else reason.value)
        self.reason = reason
