//! `tools/call`: the tool found for its caller, the path its call takes (a straight
//! run, rounds of questions for a sessionless client, a task, a session call that
//! reports as it runs), and what the call reports on the way, delivered.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Notification, ProgressToken, ServerNotification,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::ask::ClientRequest;
use crate::error::ToolError;
use crate::log::LogLevel;
use crate::options::{CallOptions, CollectLimit};
use crate::remote::{self, Admitted, Found, Lookup, Plan, RemoteCall};

use super::caller::{LogGate, log_gate, sessionless, trace_of};
use super::refusal;
use super::report::{Monotonic, Outbox, Report, Step, log_param};
use super::rounds::{self, refused};
use super::server::Server;
use super::shape::{Shape, into_result, shape_of};
use super::{ask, tasks, tracked};

impl Server {
    /// The function `name` calls, admitted once for this caller (a tool a layer
    /// hides from it is unknown to it; its scopes, the capabilities it needs and
    /// whether it may become a task judged), with the caller's options when layers
    /// or scopes made them.
    fn callable(
        &self,
        name: &str,
        context: &RequestContext<RoleServer>,
        sessionless: bool,
    ) -> Result<(Admitted, Option<CallOptions>), ErrorData> {
        // Made at once only for layers and scopes to judge; a straight call takes
        // its session's.
        let early = (self.shared.registry.has_layers() || self.shared.authenticator.is_some())
            .then(|| self.caller_options(context));
        let takes = || tasks::client_takes_tasks(context);
        let declared = || declared_capabilities(context);
        // Only a 2026-07-28 client takes a task; a call that needs confirmation asks
        // for it first, in a round.
        let mut call = RemoteCall::new(name, Lookup::FUNCTION)
            .stream(true)
            .tasks(&takes, sessionless)
            .asks_first()
            .declared(&declared);
        if let Some(options) = &early {
            call = call.caller(options);
        }
        match remote::admit(&self.shared.registry, &call) {
            Ok(admitted) => Ok((admitted, early)),
            Err(refused) => Err(refusal::refused(name, refused)),
        }
    }

    /// `tools/call`: the tool, the protocol era and what the client can answer pick
    /// the path (a straight run, rounds of questions, a task, a session call that
    /// reports progress and logs as it runs).
    pub(super) async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Read once: the SDK parses the version out of `_meta` on every ask.
        let sessionless = sessionless(&context);
        let (
            Admitted {
                found,
                plan,
                takes_tasks,
            },
            early,
        ) = self.callable(&request.name, &context, sessionless)?;
        let gate = log_gate(&context, sessionless)?;
        // A retry answering a parked call's questions (2026-07-28).
        if let Some(state) = request.request_state.as_deref()
            && sessionless
        {
            let answers = request.input_responses.unwrap_or_default();
            // Boxed, as the other rarer paths: the common call's future stays small.
            return Box::pin(self.resume_round(&request.name, state, &answers, gate, &context))
                .await;
        }
        let mut arguments = request.arguments.unwrap_or_default();
        found.name_act(&mut arguments);
        let (stream, shape) = shape_of(&found, sessionless);
        let args = Value::Object(arguments);
        let token = context.meta.get_progress_token();
        let limit = self.shared.collect_limit;
        let logs = !matches!(gate, LogGate::Off);
        // A sync tool runs to its end within this poll: nothing can cancel it or be
        // asked of the client (asking awaits), so it needs neither.
        let straight = token.is_none() && !stream && self.runs_straight(&found);
        let may_be_task = takes_tasks && found.soft_deadline().is_some();
        if straight && !(sessionless && (logs || may_be_task)) {
            let runner = self.straight_runner(&context, early, sessionless);
            return Ok(self
                .run_reporting_after((found, args), runner, gate, &context, shape)
                .await);
        }
        let options = early.unwrap_or_else(|| self.caller_options(&context));
        let mut options = options.collect_limit(limit);
        if let Plan::Tracked { soft, .. } = plan {
            let plan = tracked::TaskPlan::new(soft, found.background_only(), shape);
            return Box::pin(self.start_task(
                &request.name,
                (found, args),
                options,
                plan,
                &context,
            ))
            .await;
        }
        if sessionless {
            return Box::pin(self.first_round(
                &request.name,
                (found, args, stream),
                options,
                token,
                gate,
                shape,
                request.input_responses.unwrap_or_default(),
                &context,
            ))
            .await
            .map(Driven::into_call);
        }
        options = options.cancel_on(context.ct.clone());
        let tool = found.name().to_owned();
        // Questions the tool asks go back to this client, on its session.
        let asker = ask::through(&context, tool.clone());
        if found.needs_confirmation() {
            let confirmed =
                Box::pin(ask::confirm(|_, question| asker(question), &tool, &args)).await;
            if let Err(err) = confirmed {
                return Ok(into_result(Err(err), shape).into());
            }
        }
        options = options.on_client_request(asker);
        if token.is_none() && !stream && (!logs || self.runs_straight(&found)) {
            // Nothing to report while it runs (a sync tool's logs wait for its end).
            let runner = self.shared.registry.with(options);
            return Ok(self
                .run_reporting_after((found, args), runner, gate, &context, shape)
                .await);
        }
        let (progress_tx, mut progress_rx) = mpsc::unbounded_channel();
        options = reporting(options, token.is_some(), logs, &progress_tx);
        let runner = self.shared.registry.with(options);
        let items = token.is_some().then(|| progress_tx.clone());
        drop(progress_tx);
        let call = collected(found, runner, args, stream, limit, items);
        let mut progress = Monotonic::new(token.clone());
        let mut call = std::pin::pin!(call);
        let outcome = loop {
            tokio::select! {
                biased;
                Some(report) = progress_rx.recv() => {
                    self.deliver(report, &mut progress, gate, &context).await;
                }
                outcome = &mut call => break outcome,
            }
        };
        while let Ok(report) = progress_rx.try_recv() {
            self.deliver(report, &mut progress, gate, &context).await;
        }
        Ok(into_result(outcome, shape).into())
    }
}

impl Server {
    /// The runner of a straight call: the client's, kept; a call that brought its
    /// trace context carries it in options of its own.
    fn straight_runner(
        &self,
        context: &RequestContext<RoleServer>,
        early: Option<CallOptions>,
        sessionless: bool,
    ) -> crate::exec::runner::Runner {
        if trace_of(context).is_none() {
            return self.caller_runner(context, sessionless);
        }
        let options = early.unwrap_or_else(|| self.caller_options(context));
        let limit = self.shared.collect_limit;
        self.shared.registry.with(options.collect_limit(limit))
    }

    /// Starts a sessionless call: it runs in its own task, so that questions it asks
    /// can be answered by the client's next round.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn first_round(
        &self,
        name: &str,
        (found, args, stream): (Found, Value, bool),
        options: CallOptions,
        token: Option<ProgressToken>,
        gate: LogGate,
        shape: Shape,
        answered: rmcp::model::InputResponses,
        context: &RequestContext<RoleServer>,
    ) -> Result<Driven, ErrorData> {
        // Parked, the call stays its caller's: only that caller resumes it.
        let owner = options.owner().map(str::to_owned);
        let (question_tx, questions) = mpsc::unbounded_channel::<rounds::Question>();
        let (report_tx, reports) = mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        let mut options = reporting(
            options,
            token.is_some(),
            !matches!(gate, LogGate::Off),
            &report_tx,
        )
        .cancel_on(cancel.clone());
        let asker = move |name: Option<String>, request: ClientRequest| {
            let questions = question_tx.clone();
            async move {
                let (answer, answered) = tokio::sync::oneshot::channel();
                questions
                    .send(rounds::Question {
                        name,
                        request,
                        answer,
                    })
                    .map_err(|_| ToolError::failed("the call's request is over"))?;
                answered.await.unwrap_or_else(|_| {
                    Err(ToolError::Cancelled {
                        reason: Some("the client did not answer".into()),
                    })
                })
            }
        };
        options = options
            .on_named_client_request(asker.clone())
            .collect_limit(self.shared.collect_limit);
        let confirm = found.needs_confirmation();
        let tool = found.name().to_owned();
        let runner = self.shared.registry.with(options);
        let items = token.is_some().then(|| report_tx.clone());
        drop(report_tx);
        let limit = self.shared.collect_limit;
        // Held by the call while it runs, parked or not: counted in the budgets.
        let args_bytes = crate::options::json_size(&args);
        // Polled by this request until it asks its caller something (then it is
        // detached onto a task of its own, to run on while parked).
        let outcome = rounds::Outcome::InPlace(Box::pin(async move {
            if confirm {
                ask::confirm(asker, &tool, &args).await?;
            }
            collected(found, runner, args, stream, limit, items).await
        }));
        let running = rounds::Running {
            tool: name.to_owned(),
            owner,
            outcome,
            questions,
            reports,
            progress: Monotonic::new(token),
            shape,
            cancel,
            pending: Vec::new(),
            answered,
            parked_by: None,
            args_bytes,
        };
        self.drive(running, gate, context).await
    }

    /// Hands a retry's answers to the questions they answer; asks again what is
    /// unanswered (or answered with the wrong kind of value), else goes on.
    async fn answer_round(
        &self,
        mut running: rounds::Running,
        answers: &rmcp::model::InputResponses,
        gate: LogGate,
        context: &RequestContext<RoleServer>,
    ) -> Result<Driven, ErrorData> {
        crate::propagate::link(&tracing::Span::current(), running.parked_by.as_ref());
        for (key, question) in std::mem::take(&mut running.pending) {
            match answers.get(&key) {
                Some(answer) if rounds::fits(&question.request, answer) => {
                    let _ = question.answer.send(Ok(answer.clone()));
                }
                _ => running.pending.push((key, question)),
            }
        }
        // The rest may answer questions still to come.
        for (key, answer) in answers {
            if !running.pending.iter().any(|(k, _)| k == key) {
                running.answered.insert(key.clone(), answer.clone());
            }
        }
        if running.pending.is_empty() {
            return self.drive(running, gate, context).await;
        }
        self.ask_round(running)
    }

    /// A retry of `name` with the `state` of a round: its answers go to the call
    /// that round parked, when the state was made for this caller.
    async fn resume_round(
        &self,
        name: &str,
        state: &str,
        answers: &rmcp::model::InputResponses,
        gate: LogGate,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let options = self.caller_options(context);
        let owner = options.owner();
        match self
            .shared
            .rounds
            .resume(name, owner, state)
            .map_err(refused)?
        {
            rounds::Held::Call(running) => self
                .answer_round(running, answers, gate, context)
                .await
                .map(Driven::into_call),
            rounds::Held::Task(parked) => self.resume_task(name, owner, parked, answers).await,
        }
    }

    /// A retry of a prompt's or a resource's call, its round parked under `bound`,
    /// with the `state` of that round.
    pub(super) async fn resume_bound(
        &self,
        bound: &str,
        state: &str,
        answers: &rmcp::model::InputResponses,
        gate: LogGate,
        context: &RequestContext<RoleServer>,
    ) -> Result<Driven, ErrorData> {
        let options = self.caller_options(context);
        let owner = options.owner();
        match self
            .shared
            .rounds
            .resume(bound, owner, state)
            .map_err(refused)?
        {
            rounds::Held::Call(running) => self.answer_round(running, answers, gate, context).await,
            rounds::Held::Task(_) => Err(refused(rounds::Refused::Integrity)),
        }
    }

    /// Parks the call and answers with its questions.
    fn ask_round(&self, mut running: rounds::Running) -> Result<Driven, ErrorData> {
        let requests = rounds::requests(&running.pending);
        // The request answering them links to this one's span.
        running.parked_by = crate::propagate::outgoing(&tracing::Span::current(), None);
        let state = self.shared.rounds.park(running).map_err(refused)?;
        Ok(Driven::Asked(rmcp::model::InputRequiredResult::new(
            Some(requests),
            Some(state),
        )))
    }

    /// Runs a call's round: its reports go to this request's stream, until it
    /// answers or asks questions this client can answer.
    async fn drive(
        &self,
        mut running: rounds::Running,
        gate: LogGate,
        context: &RequestContext<RoleServer>,
    ) -> Result<Driven, ErrorData> {
        // The client's capabilities, read when the call first asks it something.
        let mut declared: Option<Value> = None;
        loop {
            let step = tokio::select! {
                biased;
                Some(report) = running.reports.recv() => Round::Report(report),
                outcome = &mut running.outcome => Round::Done(outcome),
                Some(question) = running.questions.recv() => Round::Asked(question),
                () = context.ct.cancelled() => Round::Cancelled,
            };
            match step {
                Round::Report(report) => {
                    self.deliver(report, &mut running.progress, gate, context)
                        .await;
                }
                Round::Done(outcome) => {
                    while let Ok(report) = running.reports.try_recv() {
                        self.deliver(report, &mut running.progress, gate, context)
                            .await;
                    }
                    return Ok(Driven::Done(outcome, running.shape));
                }
                Round::Cancelled => {
                    running.cancel.cancel();
                    return Ok(Driven::Done(
                        Err(ToolError::Cancelled {
                            reason: Some("the request was cancelled".into()),
                        }),
                        running.shape,
                    ));
                }
                Round::Asked(question) => {
                    // The call runs on by itself from here: it may be parked.
                    running.outcome.detach();
                    let mut asked = vec![question];
                    // Questions asked together (`join!`) arrive together.
                    for _ in 0..4 {
                        tokio::task::yield_now().await;
                        while let Ok(question) = running.questions.try_recv() {
                            asked.push(question);
                        }
                    }
                    let declared = declared.get_or_insert_with(|| {
                        context
                            .client_capabilities()
                            .and_then(|c| serde_json::to_value(c).ok())
                            .unwrap_or(Value::Null)
                    });
                    for question in asked {
                        let capability = rounds::capability(&question.request);
                        if declared.get(capability).is_none_or(Value::is_null) {
                            let err = ToolError::custom(
                                "CLIENT_CANNOT_ANSWER",
                                501,
                                format!(
                                    "`{}` asked the MCP client {}, and this client did not \
                                     declare `{capability}`",
                                    running.tool,
                                    question.request.kind()
                                ),
                            );
                            let _ = question.answer.send(Err(err));
                            continue;
                        }
                        let key = question.name.clone().unwrap_or_else(|| {
                            rounds::key(running.pending.len() + 1, &question.request)
                        });
                        // Answered before it was asked.
                        if let Some(answer) = running.answered.remove(&key)
                            && rounds::fits(&question.request, &answer)
                        {
                            let _ = question.answer.send(Ok(answer));
                            continue;
                        }
                        running.pending.push((key, question));
                    }
                    if !running.pending.is_empty() {
                        return self.ask_round(running);
                    }
                }
            }
        }
    }
}

/// Where a sessionless call's round left it: done, or asking its client.
pub(super) enum Driven {
    /// The call's outcome, and how a `tools/call` answers it.
    Done(Result<Value, ToolError>, Shape),
    /// Questions for the client, with the state of the parked call.
    Asked(rmcp::model::InputRequiredResult),
}

impl Driven {
    /// The round's answer to a `tools/call`.
    pub(super) fn into_call(self) -> CallToolResponse {
        match self {
            Self::Done(outcome, shape) => into_result(outcome, shape).into(),
            Self::Asked(asked) => CallToolResponse::InputRequired(asked),
        }
    }
}

/// What happened in a round.
enum Round {
    Report(Report),
    Done(Result<Value, ToolError>),
    Asked(rounds::Question),
    Cancelled,
}

impl Server {
    /// The level a session's `logging/setLevel` asked for (debug until then).
    fn session_log_level(&self) -> LogLevel {
        let index = self.session.log_level.load(Ordering::Relaxed);
        LogLevel::ALL
            .get(usize::from(index))
            .copied()
            .unwrap_or(LogLevel::Debug)
    }

    /// Whether a message at `level` goes to the client under `gate`.
    fn admits(&self, gate: LogGate, level: LogLevel) -> bool {
        match gate {
            LogGate::Off => false,
            LogGate::Request(least) => level >= least,
            LogGate::Session => level >= self.session_log_level(),
        }
    }

    /// Sends one report of a running call to the client (through the request's
    /// [`Outbox`] when the server writes the answer itself); a client that went
    /// away misses it, and the call goes on.
    async fn deliver(
        &self,
        report: Report,
        progress: &mut Monotonic,
        gate: LogGate,
        context: &RequestContext<RoleServer>,
    ) {
        let outbox = context.extensions.get::<Outbox>();
        let peer = &context.peer;
        match report {
            Report::Log(message) => {
                if self.admits(gate, message.level) {
                    let param = log_param(message);
                    match outbox {
                        Some(outbox) => {
                            let notification = Notification::new(param);
                            let _ = outbox
                                .0
                                .send(ServerNotification::LoggingMessageNotification(notification));
                        }
                        #[allow(deprecated)]
                        None => {
                            let _ = peer.notify_logging_message(param).await;
                        }
                    }
                }
            }
            Report::Step(step) => {
                if let Some(param) = progress.admit(step) {
                    match outbox {
                        Some(outbox) => {
                            let notification = Notification::new(param);
                            let _ = outbox
                                .0
                                .send(ServerNotification::ProgressNotification(notification));
                        }
                        None => {
                            let _ = peer.notify_progress(param).await;
                        }
                    }
                }
            }
        }
    }

    /// Whether a call of `tool` that wants no progress can run straight through the
    /// registry: a sync tool cannot ask its client anything (asking awaits), and
    /// with no layer to ask in its place nothing can be parked or reported.
    fn runs_straight(&self, found: &Found) -> bool {
        // A kept runner carries no identity: authenticated calls take the other path.
        found.runs_inline()
            && !self.shared.registry.has_layers()
            && !found.needs_confirmation()
            && self.shared.authenticator.is_none()
    }

    /// A call with nothing to report while it runs: a tool that wants no progress
    /// and either logs nothing the client hears (a sessionless request without a
    /// level, or `gate` off) or is sync (it cannot be waited on, so its log messages
    /// are gathered and sent before its answer).
    async fn run_reporting_after(
        &self,
        (found, args): (Found, Value),
        runner: crate::exec::runner::Runner,
        gate: LogGate,
        context: &RequestContext<RoleServer>,
        shape: Shape,
    ) -> CallToolResponse {
        if matches!(gate, LogGate::Off) {
            let outcome = found.run(&runner, args).await;
            return into_result(outcome, shape).into();
        }
        let logged = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&logged);
        let logging = CallOptions::new().on_log(move |message| {
            sink.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(message);
        });
        let outcome = found.run(&runner.with(logging), args).await;
        let messages = std::mem::take(&mut *logged.lock().unwrap_or_else(PoisonError::into_inner));
        let mut progress = Monotonic::new(None);
        for message in messages {
            self.deliver(Report::Log(message), &mut progress, gate, context)
                .await;
        }
        into_result(outcome, shape).into()
    }
}

/// Adds the listeners that turn a call's progress and logs into reports.
fn reporting(
    mut options: CallOptions,
    progress: bool,
    logs: bool,
    tx: &mpsc::UnboundedSender<Report>,
) -> CallOptions {
    if progress {
        let tx = tx.clone();
        options = options.on_progress(move |progress| {
            // The receiver lives until the call has answered.
            let _ = tx.send(Report::Step(Step::Progress(progress)));
        });
    }
    if logs {
        let tx = tx.clone();
        options = options.on_log(move |message| {
            let _ = tx.send(Report::Log(message));
        });
    }
    options
}

/// Runs a found call to one value: a streaming tool's items collected (within
/// `limit`), each reported to `items` when given.
async fn collected(
    found: Found,
    runner: crate::exec::runner::Runner,
    args: Value,
    stream: bool,
    limit: CollectLimit,
    items: Option<mpsc::UnboundedSender<Report>>,
) -> Result<Value, ToolError> {
    found
        .collect(&runner, args, stream, limit, |n, item| {
            if let Some(tx) = &items {
                let _ = tx.send(Report::Step(Step::Item(n, item.clone())));
            }
        })
        .await
}

/// The capabilities the client of `context` declared, as JSON.
fn declared_capabilities(context: &RequestContext<RoleServer>) -> Value {
    context
        .client_capabilities()
        .and_then(|c| serde_json::to_value(c).ok())
        .unwrap_or(Value::Null)
}
