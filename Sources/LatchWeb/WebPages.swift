/// Every page LatchWeb renders — the hosted sign-in pages and the admin console — with their templates parsed and
/// checked. Made once at start-up: a missing or broken template stops the deployment there, instead of answering
/// empty pages.
public struct WebPages: Sendable {
    public let hosted: HostedPageRenderer
    public let console: ConsoleRenderer

    /// Throws when a built-in template is missing or does not parse.
    public init() throws(WebTemplateError) {
        hosted = try HostedPageRenderer()
        console = try ConsoleRenderer()
    }

    public init(hosted: HostedPageRenderer, console: ConsoleRenderer) {
        self.hosted = hosted
        self.console = console
    }
}
