//! The MCP tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`), on the
//! server's [`Ledger`].
//!
//! The server declares the extension in its capabilities. A `background` tool
//! called by a client that declares it too (in the request's
//! `clientCapabilities`, or at `initialize`) runs as a tracked call:
//!
//! - up to its soft deadline the call runs as any other: what it asks its caller
//!   comes back as an input-required round (`requestState` sealed as for other
//!   rounds), and an answer that comes in time is the `tools/call` result;
//! - past the soft deadline (at once for a deadline of zero, and always for a
//!   `background = "only"` tool) the `tools/call` answers `resultType: "task"` with
//!   the ledger's id, and the client reads the call with `tasks/get`, answers what
//!   it asks with `tasks/update`, and stops it with `tasks/cancel`.
//!
//! A tool error is a `completed` task whose result has `isError: true`; a panic is
//! a `failed` task (`-32603`); a cancelled call is `cancelled`. A task belongs to
//! the client that started it (the verified subject, else its `clientInfo.name`)
//! and is read only while the layers let that client see its tool: anyone else
//! gets exactly the `-32602` an id that does not exist gets. A client that does not declare the extension runs
//! `background` tools to the end in one round, and is refused `background = "only"`
//! tools with `-32021`.

use std::time::SystemTime;

use rmcp::model::{
    CallToolResponse, CancelTaskParams, ClientCapabilities, CreateTaskResult, DetailedTask,
    GetTaskParams, GetTaskResult, InputRequests, JsonObject, Task, TaskPayload, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};

use crate::error::ToolError;
use crate::options::CallOptions;
use crate::remote::ledger::{Ledger, Question, Retention, TaskInfo, TaskPoll, TaskStatus, Track};
use crate::remote::{self, Found};

use super::caller::sessionless;
use super::rounds;
use super::server::Server;
use super::shape::{Shape, error_data, into_result, shape_of};
use super::tracked::{Parked, TaskPlan};

/// How often a client is asked to poll `tasks/get`, in milliseconds.
pub(super) const POLL_INTERVAL_MS: u64 = 1000;

/// The `tools/list` `_meta` key that says how a tool takes tasks: `"optional"`
/// (a `background` tool) or `"required"` (`background = "only"`).
pub const TASK_SUPPORT_KEY: &str = crate::llm::TASK_SUPPORT_KEY;

/// Whether the client of `context` declared it takes tasks.
pub(super) fn client_takes_tasks(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|caps| caps.supports_tasks())
}

/// `-32021`: the tool runs only as a task, and this client takes none.
pub(super) fn tasks_required(tool: &str) -> ErrorData {
    let mut error = ErrorData::missing_required_client_capability(
        ClientCapabilities::builder().enable_tasks().build(),
    );
    error.message = format!(
        "`{tool}` runs only as a task: declare the `{}` extension in the client's \
         capabilities",
        rmcp::model::TASKS_EXTENSION_ID
    )
    .into();
    error
}

fn timestamp(at: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn task_of(info: &TaskInfo) -> Task {
    let status = match info.status {
        TaskStatus::InputRequired => rmcp::model::TaskStatus::InputRequired,
        TaskStatus::Completed => rmcp::model::TaskStatus::Completed,
        TaskStatus::Failed => rmcp::model::TaskStatus::Failed,
        TaskStatus::Cancelled => rmcp::model::TaskStatus::Cancelled,
        _ => rmcp::model::TaskStatus::Working,
    };
    let mut task = Task::new(
        info.id.clone(),
        status,
        timestamp(info.started),
        timestamp(info.updated),
    )
    .with_poll_interval_ms(POLL_INTERVAL_MS);
    if let Retention::KeepFor(keep) = info.retention {
        let ms = u64::try_from(keep.as_millis()).unwrap_or(u64::MAX).max(1);
        task = task.with_ttl_ms(ms);
    }
    if let Some(message) = info.progress.as_ref().and_then(|p| p.message.clone()) {
        task = task.with_status_message(message);
    }
    task
}

/// The questions a call waits on, as the client gets them.
fn requests_of(questions: &[Question]) -> InputRequests {
    questions
        .iter()
        .filter_map(|q| rounds::input_request(&q.request).map(|r| (q.key.clone(), r)))
        .collect()
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        other => {
            let mut object = JsonObject::new();
            object.insert("value".into(), other);
            object
        }
    }
}

/// A finished call as `tasks/get` inlines it.
fn payload_of(outcome: Result<Value, ToolError>, shape: Shape) -> TaskPayload {
    match outcome {
        Err(ToolError::Cancelled { .. }) => TaskPayload::Cancelled,
        Err(err @ ToolError::Panicked { .. }) => TaskPayload::Failed {
            error: object(json!({
                "code": rmcp::model::ErrorCode::INTERNAL_ERROR.0,
                "message": err.to_string(),
                "data": {"code": err.code()},
            })),
        },
        outcome => TaskPayload::Completed {
            result: object(serde_json::to_value(into_result(outcome, shape)).unwrap_or_default()),
        },
    }
}

fn unknown_task(id: &str) -> ErrorData {
    ErrorData::invalid_params(format!("unknown task: {id}"), Some(json!({"taskId": id})))
}

fn refused(err: &ToolError) -> ErrorData {
    ErrorData::internal_error(err.to_string(), Some(error_data(err)))
}

/// The most capability names a task keeps of what its client declared.
const MAX_DECLARED: usize = 32;

impl Server {
    /// Starts `tool` as a tracked call for a client that takes tasks, and answers
    /// as its [`TaskPlan`] says.
    pub(super) async fn start_task(
        &self,
        called: &str,
        (found, args): (Found, Value),
        options: CallOptions,
        plan: TaskPlan,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // The task is its caller's, and read through the caller's view of the ledger.
        let owner = options.owner().map(str::to_owned);
        let ledger = self.shared.ledger.for_caller(owner.as_deref());
        let id = format!("task-{}", crate::id::random_hex());
        // Which capabilities the client declared, by name: kept for the task's life
        // (not a copy of everything it declared), and counted in its quota.
        let declared: Vec<String> = context
            .client_capabilities()
            .and_then(|c| serde_json::to_value(c).ok())
            .and_then(|c| match c {
                Value::Object(map) => Some(
                    map.into_iter()
                        .filter(|(_, v)| !v.is_null())
                        .map(|(k, _)| k)
                        .take(MAX_DECLARED)
                        .collect(),
                ),
                _ => None,
            })
            .unwrap_or_default();
        let kept = declared.iter().map(|name| name.len() + 24).sum::<usize>();
        // What the call asks waits in the ledger, for a round or a `tasks/update`.
        let asking = (ledger.clone(), id.clone(), found.name().to_owned());
        let options = options.on_named_client_request(move |name, request| {
            let (ledger, id, tool) = &asking;
            let capability = request.capability();
            let answer = declared
                .iter()
                .any(|declared| declared == capability)
                .then(|| ledger.ask(id, name, request.clone()));
            let tool = tool.clone();
            async move {
                match answer {
                    Some(answer) => answer.await,
                    None => Err(ToolError::custom(
                        "CLIENT_CANNOT_ANSWER",
                        501,
                        format!(
                            "`{tool}` asked the MCP client {}, and this client did not \
                             declare `{capability}`",
                            request.kind()
                        ),
                    )),
                }
            }
        });
        let track = Track::new().id(id.clone()).options(options).keeps(kept);
        found
            .track(&ledger, args, track)
            .map_err(|err| refused(&err))?;
        self.settle_task(called, (&ledger, owner.as_deref()), id, plan)
            .await
    }

    /// Waits up to the soft deadline, then answers: a round of questions, the
    /// call's own result, or the task. `ledger` is the caller's view, `owner` the
    /// caller.
    pub(super) async fn settle_task(
        &self,
        called: &str,
        (ledger, owner): (&Ledger, Option<&str>),
        id: String,
        plan: TaskPlan,
    ) -> Result<CallToolResponse, ErrorData> {
        let info = if plan.soft.is_zero() {
            ledger.status(&id)
        } else {
            ledger.settle(&id, plan.soft).await.ok()
        };
        let Some(info) = info else {
            return Err(unknown_task(&id));
        };
        if !plan.soft.is_zero() && info.status == TaskStatus::InputRequired {
            // Asked before it became a task: a round, as for any call.
            let requests = requests_of(&info.questions);
            let parked = Parked {
                id,
                ledger: Some(ledger.clone()),
                plan,
            };
            let state = self
                .shared
                .rounds
                .park_task(called, owner, parked)
                .map_err(rounds::refused)?;
            return Ok(CallToolResponse::InputRequired(
                rmcp::model::InputRequiredResult::new(Some(requests), Some(state)),
            ));
        }
        if info.status.is_finished() && !plan.only {
            // Done within the soft deadline: the answer itself.
            if let Ok(TaskPoll::Done(outcome)) = ledger.poll(&id) {
                ledger.remove(&id);
                return Ok(into_result(outcome, plan.shape).into());
            }
        }
        Ok(CallToolResponse::Task(CreateTaskResult::new(task_of(
            &info,
        ))))
    }

    /// A retry of `owner` answering the questions a call asked before it became a
    /// task.
    pub(super) async fn resume_task(
        &self,
        called: &str,
        owner: Option<&str>,
        mut parked: Parked,
        answers: &rmcp::model::InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        let id = parked.id.clone();
        let plan = parked.plan;
        let ledger = parked
            .ledger
            .take()
            .unwrap_or_else(|| self.shared.ledger.for_caller(owner));
        answer(&ledger, &id, answers);
        self.settle_task(called, (&ledger, owner), id, plan).await
    }

    /// The task `id` if this client may see it, with the client's view of the
    /// ledger; else `-32602`, exactly as for an id that does not exist.
    fn task_for(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(Ledger, TaskInfo), ErrorData> {
        let options = self.caller_options(context);
        let ledger = self.shared.ledger.for_caller(options.owner());
        let info = ledger.status(id).ok_or_else(|| unknown_task(id))?;
        if !remote::tracked_shown(&self.shared.registry, &info.tool, Some(&options)) {
            return Err(unknown_task(id));
        }
        Ok((ledger, info))
    }

    /// `tasks/get`: where the task stands, with its questions or its result.
    pub(super) fn get_task_result(
        &self,
        params: &GetTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let (ledger, info) = self.task_for(&params.task_id, context)?;
        let payload = match info.status {
            TaskStatus::InputRequired => TaskPayload::InputRequired {
                input_requests: requests_of(&info.questions),
            },
            TaskStatus::Cancelled => TaskPayload::Cancelled,
            status if status.is_finished() => match ledger.poll(&info.id) {
                Ok(TaskPoll::Done(outcome)) => payload_of(outcome, self.task_shape(&info, context)),
                _ => TaskPayload::Working,
            },
            _ => TaskPayload::Working,
        };
        Ok(GetTaskResult::new(DetailedTask::new(
            task_of(&info),
            payload,
        )))
    }

    /// `tasks/update`: answers the task's questions; keys it does not wait on, and
    /// answers of the wrong kind, are left alone.
    pub(super) fn update_task_answers(
        &self,
        params: &UpdateTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (ledger, info) = self.task_for(&params.task_id, context)?;
        answer(&ledger, &info.id, &params.input_responses);
        Ok(())
    }

    /// `tasks/cancel`: stops the task; a finished one stays as it was.
    pub(super) fn cancel_task_now(
        &self,
        params: &CancelTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (ledger, info) = self.task_for(&params.task_id, context)?;
        ledger.cancel(&info.id).map_err(|_| unknown_task(&info.id))
    }

    /// How the result of the task's tool is answered.
    fn task_shape(&self, info: &TaskInfo, context: &RequestContext<RoleServer>) -> Shape {
        match remote::find_tracked(&self.shared.registry, &info.tool, info.act.as_deref()) {
            Some(found) => shape_of(&found, sessionless(context)).1,
            None => Shape {
                content: false,
                any_structured: false,
            },
        }
    }
}

/// Hands each answer to the question it answers, when it is of the right kind.
fn answer(ledger: &Ledger, id: &str, answers: &rmcp::model::InputResponses) {
    let Some(info) = ledger.status(id) else {
        return;
    };
    for question in &info.questions {
        if let Some(answer) = answers.get(&question.key)
            && rounds::fits(&question.request, answer)
        {
            let _ = ledger.answer(id, &question.key, answer.clone());
        }
    }
}
