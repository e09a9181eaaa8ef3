//! The APIs a benchmark can speak, by name: what a spec chooses. How each is written and
//! read on the wire is the load generator's (`loadgen::backend`).

/// An inference server's streaming API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Api {
    /// OpenAI-compatible text completions, `POST /v1/completions`.
    OpenaiCompletions,
    /// OpenAI-compatible chat completions, `POST /v1/chat/completions` (the prompt is one user message).
    OpenaiChat,
    /// Hugging Face TGI's native `POST /generate_stream`.
    Tgi,
    /// SGLang's native `POST /generate`.
    Sglang,
    /// OpenAI's Responses API, `POST /v1/responses` (typed stream events; a conversation's
    /// turns chained by `previous_response_id`).
    OpenaiResponses,
    /// OpenAI-compatible embeddings, `POST /v1/embeddings` (a batch of inputs a request:
    /// `--data inputs_per_request=K`).
    OpenaiEmbeddings,
    /// Rerank, `POST /v1/rerank` as vLLM, Jina and llama.cpp serve it (a query and its
    /// documents: `--data documents=P,document_tokens=D`).
    Rerank,
    /// Text Embeddings Inference's rerank, `POST /rerank` (`texts`, a bare array of scores).
    TeiRerank,
}

impl Api {
    /// Every API, in the order `--help` lists them.
    pub const ALL: [Api; 8] = [
        Api::OpenaiCompletions,
        Api::OpenaiChat,
        Api::Tgi,
        Api::Sglang,
        Api::OpenaiResponses,
        Api::OpenaiEmbeddings,
        Api::Rerank,
        Api::TeiRerank,
    ];

    /// The API of a name as [`Api::as_str`] spells it.
    pub fn from_name(name: &str) -> Option<Api> {
        Api::ALL.into_iter().find(|a| a.as_str() == name)
    }

    /// The name used on the command line and in result documents.
    pub fn as_str(self) -> &'static str {
        match self {
            Api::OpenaiCompletions => "openai-completions",
            Api::OpenaiChat => "openai-chat",
            Api::Tgi => "tgi",
            Api::Sglang => "sglang",
            Api::OpenaiResponses => "openai-responses",
            Api::OpenaiEmbeddings => "openai-embeddings",
            Api::Rerank => "rerank",
            Api::TeiRerank => "tei-rerank",
        }
    }

    /// Whether the answer streams tokens; embeddings and rerank answer once, whole.
    pub fn streams(self) -> bool {
        !matches!(self, Api::OpenaiEmbeddings | Api::Rerank | Api::TeiRerank)
    }

    /// Whether it scores documents against a query (vLLM's/Jina's `/v1/rerank` or TEI's `/rerank`).
    pub fn reranks(self) -> bool {
        matches!(self, Api::Rerank | Api::TeiRerank)
    }

    /// Whether its requests can carry images (`image_url` parts in chat messages).
    pub fn carries_images(self) -> bool {
        self == Api::OpenaiChat
    }

    /// The HTTP path requests are POSTed to.
    pub fn path(self) -> &'static str {
        match self {
            Api::OpenaiCompletions => "/v1/completions",
            Api::OpenaiChat => "/v1/chat/completions",
            Api::Tgi => "/generate_stream",
            Api::Sglang => "/generate",
            Api::OpenaiResponses => "/v1/responses",
            Api::OpenaiEmbeddings => "/v1/embeddings",
            Api::Rerank => "/v1/rerank",
            Api::TeiRerank => "/rerank",
        }
    }
}
