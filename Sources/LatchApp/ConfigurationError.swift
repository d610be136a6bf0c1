/// A configuration value that stops the start: which key, where its value came from, and what is wrong with it.
public struct ConfigurationError: Error, CustomStringConvertible {
    public let key: String
    /// A flag, an environment variable, or a file; nil when not known.
    public var source: String?
    public let problem: String

    public init(key: String, source: String? = nil, problem: String) {
        self.key = key
        self.source = source
        self.problem = problem
    }

    public var description: String { "configuration \(key)" + (source.map { " (\($0))" } ?? "") + " \(problem)" }
}
