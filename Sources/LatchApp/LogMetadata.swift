import Logging

extension LogHandler {
    /// What a line of `event` carries: the handler's metadata, then its provider's, then the event's own (a later
    /// value wins a key).
    func metadata(for event: LogEvent) -> Logger.Metadata {
        var merged = metadata
        if let provided = metadataProvider?.get(), !provided.isEmpty { merged.merge(provided) { _, new in new } }
        if let extra = event.metadata, !extra.isEmpty { merged.merge(extra) { _, new in new } }
        return merged
    }
}
