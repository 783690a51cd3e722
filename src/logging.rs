//! Logs on stderr in the `[LEVEL] message` form Terraform maps to its own
//! levels, shown with `TF_LOG_PROVIDER` (or `TF_LOG`). Nothing secret is
//! ever logged: configuration values are not traced.

use tracing_subscriber::EnvFilter;

/// Installs the stderr logger at the level `TF_LOG_PROVIDER` or `TF_LOG`
/// asks for (`warn` otherwise); a second call does nothing.
pub fn init() {
    let level = std::env::var("TF_LOG_PROVIDER")
        .or_else(|_| std::env::var("TF_LOG"))
        .ok()
        .and_then(|l| match l.to_ascii_lowercase().as_str() {
            "trace" | "json" => Some("trace"),
            "debug" => Some("debug"),
            "info" => Some("info"),
            "warn" => Some("warn"),
            "error" => Some("error"),
            _ => None,
        })
        .unwrap_or("warn");
    // Our own crate at the requested level; dependencies one notch quieter.
    let filter = EnvFilter::new(format!(
        "warn,gpufleet={level},terraform_provider_gpufleet={level}"
    ));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .without_time()
        .with_target(false)
        .event_format(TerraformFormat)
        .try_init();
}

struct TerraformFormat;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for TerraformFormat
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let level = match *event.metadata().level() {
            tracing::Level::TRACE => "TRACE",
            tracing::Level::DEBUG => "DEBUG",
            tracing::Level::INFO => "INFO",
            tracing::Level::WARN => "WARN",
            tracing::Level::ERROR => "ERROR",
        };
        write!(writer, "[{level}] gpufleet: ")?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}
