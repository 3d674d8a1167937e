//! Search over a registry's tools: each registry keeps an inverted index of its own
//! tools' words (name, aliases, title, description, summary, tags, and the names and
//! descriptions of parameters and acts), changed tool by tool as tools come and go,
//! and ranks them by BM25 against a query.
//!
//! The index is made on a registry's first search (a program that never searches
//! pays nothing) and from then on follows every registration, replacement, removal
//! and clear under the registry's own lock, so a search never sees a tool the
//! registry no longer has. A chain of registries is searched as one collection: the
//! statistics BM25 weighs words with are summed over the chain, and a tool a child
//! shadows is found once, as the child's.

use std::collections::{HashMap, HashSet};
use std::sync::RwLockReadGuard;

use super::{Registry, State};
use crate::tool::{ToolDefinition, ToolRef};

/// One tool found by [`Registry::search`] (or a search that honours a caller's
/// sight, such as [`llm::search_for`](crate::llm::search_for)): its name, its score,
/// whether the query named it, and its definition as listings advertise it (an
/// authored `summary` in place of the description).
///
/// ```
/// use serde_json::Value;
/// use toolfunc::{Registry, ToolFunc};
///
/// let registry = Registry::new();
/// for (name, description) in [
///     ("weather", "Current conditions in a city."),
///     ("weather_alerts", "Severe weather warnings for a region."),
///     ("convert", "Converts between units of temperature."),
/// ] {
///     let tool = ToolFunc::builder(name)
///         .description(description)
///         .handler_sync(|_, _| Ok(Value::Null))
///         .build()
///         .unwrap();
///     registry.register(tool).unwrap();
/// }
/// let hits = registry.search("weather", 10);
/// assert_eq!(hits[0].name(), "weather"); // named exactly: first
/// assert!(hits[0].exact());
/// assert_eq!(hits[1].name(), "weather_alerts");
/// assert_eq!(hits.len(), 2);
/// let hits = registry.search("temperatures", 10);
/// assert_eq!(hits[0].definition().description.as_deref(), Some("Converts between units of temperature."));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    score: f32,
    exact: bool,
    definition: ToolDefinition,
}

impl SearchHit {
    pub(crate) fn new(definition: ToolDefinition, score: f32, exact: bool) -> Self {
        Self {
            score,
            exact,
            definition,
        }
    }

    /// The tool's name (canonical: an alias the query named is resolved).
    pub fn name(&self) -> &str {
        &self.definition.name
    }

    /// How well the tool matches the query, by BM25: higher is better, `0.0` for a
    /// tool found only because the query is its name or alias. Scores compare
    /// within one search, not across searches.
    pub fn score(&self) -> f32 {
        self.score
    }

    /// Whether the query (trimmed) is the tool's name or one of its aliases: such a
    /// hit comes first, whatever its score.
    pub fn exact(&self) -> bool {
        self.exact
    }

    /// The tool's definition, as listings advertise it (an authored `summary`
    /// replaces the description), and as the caller sees it for a search that
    /// honours a caller's sight (a service's acts it may not run left out).
    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// The definition, owned.
    pub fn into_definition(self) -> ToolDefinition {
        self.definition
    }
}

/// A tool ranked by a search, with what the search's `pick` made of it.
pub(crate) struct Ranked<T> {
    pub(crate) item: T,
    pub(crate) score: f32,
    pub(crate) exact: bool,
}

impl Registry {
    /// The tools reachable here (local and inherited) that best match `query`,
    /// best first, at most `limit`: the tool the query names (by name or alias)
    /// first, then by BM25 score over each tool's name, aliases, title,
    /// description, summary, tags, and its parameters' and acts' names and
    /// descriptions (a word in a name weighs more than one in a description), equal
    /// scores in name order. Words are compared lower-cased, split at anything that
    /// is not a letter or digit and at `camelCase` humps, with English plurals
    /// folded (`users` finds `user`); a few words every description has (`the`,
    /// `of`, `a`...) and words over 64 characters are not searched for. A query with
    /// no word to search for finds only a tool it names. A search costs time in the
    /// length of its query: bound what a caller may send (HTTP discovery's search
    /// takes at most 1,024 characters by default).
    ///
    /// This is the program's own search: it sees every tool, whatever a layer or a
    /// caller's scopes would hide. For a caller's search, use
    /// [`llm::search_for`](crate::llm::search_for) with a runner, or HTTP
    /// discovery's `?q=` (see [`http`](crate::http)). See [`SearchHit`] for an
    /// example.
    ///
    /// The index is made on the first search and then kept up to date by every
    /// registration and removal, tool by tool.
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        self.search_by(query, limit, |tool| Some(tool.definition().advertised()))
            .into_iter()
            .map(|ranked| SearchHit::new(ranked.item, ranked.score, ranked.exact))
            .collect()
    }

    /// [`search`](Self::search) through `pick`, which sees each ranked tool best
    /// first and keeps it (as what it returns) or leaves it out, until `limit` are
    /// kept. `pick` runs with no lock held.
    pub(crate) fn search_by<T>(
        &self,
        query: &str,
        limit: usize,
        mut pick: impl FnMut(&ToolRef) -> Option<T>,
    ) -> Vec<Ranked<T>> {
        if limit == 0 {
            return Vec::new();
        }
        let query = Query::new(query);
        // Most searches keep what they rank; a few more than asked for leave room
        // for what `pick` leaves out before ranking everything.
        let mut wanted = Some(limit.saturating_mul(2).saturating_add(8));
        loop {
            let (ranked, more) = self.rank(&query, wanted);
            let mut kept = Vec::with_capacity(limit.min(ranked.len()));
            for (tool, score, exact) in ranked {
                if let Some(item) = pick(&tool) {
                    kept.push(Ranked { item, score, exact });
                    if kept.len() == limit {
                        return kept;
                    }
                }
            }
            if !more || wanted.is_none() {
                return kept;
            }
            wanted = None;
        }
    }

    /// The best `wanted` tools for `query` (every match for `None`), best first,
    /// and whether more matched.
    fn rank(&self, query: &Query, wanted: Option<usize>) -> (Vec<(ToolRef, f32, bool)>, bool) {
        let levels = self.indexed_chain();
        let exact = query.exact.as_deref().and_then(|name| {
            levels
                .iter()
                .find_map(|state| state.slot(name))
                .map(|slot| slot.tool.clone())
        });
        let mut candidates = score(&levels, query);
        let name_of = |c: &Candidate| index_of(&levels[c.level]).docs_name(c.doc);
        // A tool a closer registry shadows (by name or alias) is that one's to show.
        candidates.retain(|c| {
            levels[..c.level]
                .iter()
                .all(|closer| closer.slot(name_of(c)).is_none())
        });
        let exact_score = exact.as_ref().map(|tool| {
            candidates
                .iter()
                .find(|c| name_of(c) == tool.name())
                .map_or(0.0, |c| c.score)
        });
        let by_rank = |a: &Candidate, b: &Candidate| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| name_of(a).cmp(name_of(b)))
        };
        let more = match wanted {
            Some(wanted) if wanted < candidates.len() => {
                candidates.select_nth_unstable_by(wanted, by_rank);
                candidates.truncate(wanted);
                true
            }
            _ => false,
        };
        candidates.sort_unstable_by(by_rank);
        let mut ranked = Vec::with_capacity(candidates.len() + 1);
        if let Some(tool) = &exact {
            ranked.push((tool.clone(), exact_score.unwrap_or(0.0), true));
        }
        for candidate in candidates {
            let name = name_of(&candidate);
            if exact.as_ref().is_some_and(|tool| tool.name() == name) {
                continue;
            }
            if let Some(slot) = levels[candidate.level].tools.get(name) {
                ranked.push((slot.tool.clone(), candidate.score, false));
            }
        }
        (ranked, more)
    }

    /// The tables of this registry and its parents, closest first, each with its
    /// index made.
    fn indexed_chain(&self) -> Vec<RwLockReadGuard<'_, State>> {
        let mut chain = Vec::new();
        let mut registry = Some(self);
        while let Some(current) = registry {
            chain.push(current.indexed());
            registry = current.parent();
        }
        chain
    }

    /// This registry's table, with its index made: on the first search, from every
    /// tool in it.
    fn indexed(&self) -> RwLockReadGuard<'_, State> {
        {
            let state = self.tools_read();
            if state.index.is_some() {
                return state;
            }
        }
        {
            // Not through `write()`: making the index changes no tool, so no derived
            // view is dropped. No user code runs under the lock.
            let mut state = self
                .inner
                .state
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if state.index.is_none() {
                let mut index = Index::default();
                for slot in state.tools.values() {
                    index.add(slot.tool.definition());
                }
                state.index = Some(index);
            }
        }
        // Once made, an index is only ever changed (emptied by `clear`), never taken
        // away.
        self.tools_read()
    }
}

/// The index of a table that [`Registry::indexed`] made.
fn index_of(state: &State) -> &Index {
    static EMPTY: std::sync::OnceLock<Index> = std::sync::OnceLock::new();
    state
        .index
        .as_ref()
        .unwrap_or_else(|| EMPTY.get_or_init(Index::default))
}

/// Words already seen.
type Set = HashSet<String, rustc_hash::FxBuildHasher>;

/// A query's words, each once, and the name it may be.
struct Query {
    words: Vec<String>,
    exact: Option<String>,
}

impl Query {
    fn new(text: &str) -> Self {
        // In the query's order (scores add up the same way every time), each once.
        let mut words = Vec::new();
        let mut seen = Set::default();
        each_word(text, |word| {
            if !seen.contains(word) {
                seen.insert(word.to_owned());
                words.push(word.to_owned());
            }
        });
        let trimmed = text.trim();
        Self {
            words,
            exact: (!trimmed.is_empty()).then(|| trimmed.to_owned()),
        }
    }
}

/// A tool that matched, by where it is: its registry (0 the searched one, then up
/// the chain) and its document in that registry's index.
struct Candidate {
    level: usize,
    doc: u32,
    score: f32,
}

/// BM25's term-frequency saturation.
const K1: f32 = 1.2;
/// BM25's length normalisation.
const B: f32 = 0.75;

/// Scores every tool of `levels` that has a word of `query`, with the chain's
/// statistics.
fn score(levels: &[RwLockReadGuard<'_, State>], query: &Query) -> Vec<Candidate> {
    let indexes: Vec<&Index> = levels.iter().map(|state| index_of(state)).collect();
    let docs: u32 = indexes.iter().map(|index| index.live).sum();
    if docs == 0 || query.words.is_empty() {
        return Vec::new();
    }
    let total: f64 = indexes.iter().map(|index| index.total_len).sum();
    #[expect(
        clippy::cast_possible_truncation,
        reason = "an average length, far inside f32"
    )]
    let average = (total / f64::from(docs)).max(1.0) as f32;
    // Each word's postings in each registry, and its weight over the whole chain.
    let mut lists: Vec<(f32, Vec<Option<&[Posting]>>)> = Vec::new();
    for word in &query.words {
        let per_level: Vec<Option<&[Posting]>> =
            indexes.iter().map(|index| index.postings(word)).collect();
        let df: usize = per_level.iter().flatten().map(|list| list.len()).sum();
        if df == 0 {
            continue;
        }
        #[expect(
            clippy::cast_precision_loss,
            reason = "counts of tools, exact in f32 up to 2^24"
        )]
        let (n, df) = (docs as f32, df as f32);
        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        lists.push((idf, per_level));
    }
    let mut candidates = Vec::new();
    for (level, index) in indexes.iter().enumerate() {
        if index.live == 0 {
            continue;
        }
        let mut scores = vec![0.0_f32; index.docs.len()];
        for (idf, per_level) in &lists {
            for posting in per_level[level].unwrap_or_default() {
                let Some(doc) = index
                    .docs
                    .get(posting.doc as usize)
                    .and_then(Option::as_ref)
                else {
                    continue;
                };
                let tf = posting.weight;
                let norm = K1 * (1.0 - B + B * doc.len / average);
                scores[posting.doc as usize] += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        for (doc, score) in scores.into_iter().enumerate() {
            if score > 0.0 {
                candidates.push(Candidate {
                    level,
                    // Documents are numbered in `u32` (see `Index::add`).
                    doc: u32::try_from(doc).unwrap_or(u32::MAX),
                    score,
                });
            }
        }
    }
    candidates
}

/// Where a word is found, and how much it counts there.
const NAME: f32 = 3.0;
const TITLE: f32 = 2.0;
const TAG: f32 = 2.0;
const PARAM_NAME: f32 = 1.5;
const TEXT: f32 = 1.0;
const PARAM_TEXT: f32 = 0.75;

/// The inverted index of one registry's own tools.
#[derive(Default)]
pub(super) struct Index {
    /// Word → its number.
    words: HashMap<Box<str>, u32, rustc_hash::FxBuildHasher>,
    /// By word number: the word, and the documents that have it.
    lists: Vec<(Box<str>, Vec<Posting>)>,
    /// Word numbers no word uses any more, to use again.
    free_words: Vec<u32>,
    /// By document number: the tool's document, `None` once removed.
    docs: Vec<Option<Doc>>,
    /// Document numbers to use again.
    free_docs: Vec<u32>,
    /// Tool name → its document.
    by_name: HashMap<Box<str>, u32, rustc_hash::FxBuildHasher>,
    /// How many documents there are.
    live: u32,
    /// The sum of their lengths.
    total_len: f64,
}

/// One document: a tool's name, its weighted length, and its words (to take them
/// out again).
struct Doc {
    name: Box<str>,
    len: f32,
    words: Box<[u32]>,
}

/// A document that has a word, with the word's weighted count in it.
#[derive(Clone, Copy)]
struct Posting {
    doc: u32,
    weight: f32,
}

impl Index {
    /// Adds (or replaces) the document of the tool `def` describes.
    pub(super) fn add(&mut self, def: &ToolDefinition) {
        self.remove(&def.name);
        let mut counts: HashMap<String, f32, rustc_hash::FxBuildHasher> = HashMap::default();
        let mut len = 0.0_f32;
        fields(def, |text, weight| {
            each_word(text, |word| {
                len += 1.0;
                match counts.get_mut(word) {
                    Some(count) => *count += weight,
                    None => {
                        counts.insert(word.to_owned(), weight);
                    }
                }
            });
        });
        let doc = match self.free_docs.pop() {
            Some(doc) => doc,
            // Past `u32::MAX` tools, the last number is reused: a registry holds
            // far fewer (each tool is far more than a byte).
            None => u32::try_from(self.docs.len()).unwrap_or(u32::MAX),
        };
        let mut words = Vec::with_capacity(counts.len());
        for (word, weight) in counts {
            let id = self.word_id(word);
            words.push(id);
            if let Some((_, list)) = self.lists.get_mut(id as usize) {
                list.push(Posting { doc, weight });
            }
        }
        let entry = Doc {
            name: def.name.as_str().into(),
            len,
            words: words.into_boxed_slice(),
        };
        match self.docs.get_mut(doc as usize) {
            Some(slot) => *slot = Some(entry),
            None => self.docs.push(Some(entry)),
        }
        self.by_name.insert(def.name.as_str().into(), doc);
        self.live += 1;
        self.total_len += f64::from(len);
    }

    /// Takes the document of the tool named `name` out.
    pub(super) fn remove(&mut self, name: &str) {
        let Some(doc) = self.by_name.remove(name) else {
            return;
        };
        let Some(entry) = self.docs.get_mut(doc as usize).and_then(Option::take) else {
            return;
        };
        for &word in &entry.words {
            let Some((text, list)) = self.lists.get_mut(word as usize) else {
                continue;
            };
            list.retain(|posting| posting.doc != doc);
            if list.is_empty() {
                self.words.remove(&**text);
                *text = Box::default();
                *list = Vec::new();
                self.free_words.push(word);
            }
        }
        self.free_docs.push(doc);
        self.live -= 1;
        self.total_len = (self.total_len - f64::from(entry.len)).max(0.0);
    }

    /// The number of `word`, given one if it has none.
    fn word_id(&mut self, word: String) -> u32 {
        if let Some(&id) = self.words.get(word.as_str()) {
            return id;
        }
        let word: Box<str> = word.into();
        let id = if let Some(id) = self.free_words.pop() {
            if let Some((text, _)) = self.lists.get_mut(id as usize) {
                text.clone_from(&word);
            }
            id
        } else {
            self.lists.push((word.clone(), Vec::new()));
            u32::try_from(self.lists.len() - 1).unwrap_or(u32::MAX)
        };
        self.words.insert(word, id);
        id
    }

    fn postings(&self, word: &str) -> Option<&[Posting]> {
        let id = *self.words.get(word)?;
        self.lists.get(id as usize).map(|(_, list)| list.as_slice())
    }

    /// The name of the tool of document `doc` (empty for a removed one).
    fn docs_name(&self, doc: u32) -> &str {
        self.docs
            .get(doc as usize)
            .and_then(Option::as_ref)
            .map_or("", |entry| &entry.name)
    }
}

/// Calls `each` with every text of `def` that is searched, and its weight.
fn fields(def: &ToolDefinition, mut each: impl FnMut(&str, f32)) {
    each(&def.name, NAME);
    for alias in &def.alias {
        each(alias, NAME);
    }
    if let Some(title) = &def.title {
        each(title, TITLE);
    }
    for tag in &def.tags {
        each(tag, TAG);
    }
    if let Some(description) = &def.description {
        each(description, TEXT);
    }
    if let Some(summary) = &def.summary {
        each(summary, TEXT);
    }
    params(&def.params, &mut each);
    for act in &def.acts {
        each(act.method(), PARAM_NAME);
        if let Some(title) = &act.title {
            each(title, TEXT);
        }
        if let Some(description) = &act.description {
            each(description, TEXT);
        }
        params(&act.params, &mut each);
    }
}

/// The names and descriptions of the top-level properties of a parameters schema.
fn params(schema: &serde_json::Value, each: &mut impl FnMut(&str, f32)) {
    let Some(properties) = schema
        .get("properties")
        .and_then(serde_json::Value::as_object)
    else {
        return;
    };
    for (name, property) in properties {
        // A service's `act` selector is listed with its acts already.
        if name == "act" {
            continue;
        }
        each(name, PARAM_NAME);
        for key in ["title", "description"] {
            if let Some(text) = property.get(key).and_then(serde_json::Value::as_str) {
                each(text, PARAM_TEXT);
            }
        }
    }
}

/// Words a query or a description has whatever it is about: not searched for.
const STOP_WORDS: [&str; 26] = [
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "if", "in", "into", "is", "it",
    "its", "of", "on", "or", "s", "that", "the", "this", "to", "t", "with",
];

/// Words longer than this are not searched for (nor indexed): no description has
/// them, and a query of one huge word costs nothing.
const MAX_WORD: usize = 64;

/// Calls `each` with the searchable words of `text`: split at anything that is not
/// a letter or a digit, at a lower-to-upper change (`getWeather`), at the last
/// capital of a run followed by a small letter (`HTTPServer`) and between letters
/// and digits; lower-cased, plurals folded, stop words left out.
fn each_word(text: &str, mut each: impl FnMut(&str)) {
    let mut word = String::new();
    let mut buffer = String::new();
    let chars: Vec<char> = text.chars().collect();
    let mut flush = |word: &mut String, buffer: &mut String| {
        if word.is_empty() {
            return;
        }
        if word.chars().count() <= MAX_WORD {
            buffer.clear();
            buffer.extend(word.chars().flat_map(char::to_lowercase));
            let folded = fold(buffer);
            if !STOP_WORDS.contains(&folded) {
                each(folded);
            }
        }
        word.clear();
    };
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            flush(&mut word, &mut buffer);
            continue;
        }
        if let Some(&prev) = i.checked_sub(1).and_then(|p| chars.get(p)) {
            let next = chars.get(i + 1).copied();
            let hump = prev.is_lowercase() && c.is_uppercase();
            let run_end =
                prev.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase);
            let digits = prev.is_alphanumeric() && (prev.is_numeric() != c.is_numeric());
            if hump || run_end || digits {
                flush(&mut word, &mut buffer);
            }
        }
        word.push(c);
    }
    flush(&mut word, &mut buffer);
}

/// An English plural folded to its singular, conservatively: `queries` → `query`,
/// `boxes` → `box`, `users` → `user`; `status`, `class` and `analysis` stay.
fn fold(word: &str) -> &str {
    let bytes = word.len();
    if !word.is_ascii() || bytes < 4 {
        return word;
    }
    if word.ends_with("ies") && bytes > 4 {
        // The `y` is put back by the caller's comparison: `queries` and `query`
        // both become `quer`.
        return &word[..bytes - 3];
    }
    if ["sses", "xes", "ches", "shes", "zes"]
        .iter()
        .any(|end| word.ends_with(end))
    {
        return &word[..bytes - 2];
    }
    if word.ends_with('s') && !["ss", "us", "is"].iter().any(|end| word.ends_with(end)) {
        return &word[..bytes - 1];
    }
    if word.ends_with('y') && bytes > 4 {
        let before = word.as_bytes()[bytes - 2];
        if !b"aeiou".contains(&before) {
            return &word[..bytes - 1];
        }
    }
    word
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        each_word(text, |w| out.push(w.to_owned()));
        out
    }

    #[test]
    fn words_are_split_lowered_and_folded() {
        assert_eq!(words("getWeather"), ["get", "weather"]);
        assert_eq!(words("HTTPServer v2"), ["http", "server", "v", "2"]);
        assert_eq!(words("list_users, the Queries!"), ["list", "user", "quer"]);
        assert_eq!(words("query"), ["quer"]);
        assert_eq!(words("boxes box"), ["box", "box"]);
        assert_eq!(
            words("status class analysis"),
            ["status", "class", "analysis"]
        );
        assert_eq!(words("Ümlaut Straße"), ["ümlaut", "straße"]);
        assert!(words(&"x".repeat(65)).is_empty());
        assert!(words("").is_empty());
    }
}
