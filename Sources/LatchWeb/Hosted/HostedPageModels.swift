/// The typed models of the hosted pages, one per template. Each carries the page's language (`lang`), its title and
/// its words (`t`), which the `head` partial and the page read.

/// `chooser`: choose an identity provider.
struct ChooserPage: WebPage {
    static let template = "chooser"
    var lang: String
    var title: String
    var t: HostedWords
    var clientName: String
    var choices: [Choice]

    struct Choice: Sendable {
        var id: String
        var name: String
        var url: String
    }
}

/// `error`: why the sign-in stopped, and its code.
struct ErrorPage: WebPage {
    static let template = "error"
    var lang: String
    var title: String
    var t: HostedWords
    var code: String
    var message: String
}

/// `confirmSignOut`: the sign-out confirmation form.
struct ConfirmSignOutPage: WebPage {
    static let template = "confirmSignOut"
    var lang: String
    var title: String
    var t: HostedWords
    /// Posted back as hidden fields, in name order.
    var fields: [Field]
    var csrf: String

    struct Field: Sendable {
        var name: String
        var value: String
    }
}

/// `proceed`: leave Latch's origin for `refreshURL` (a meta refresh and a link).
struct ProceedPage: WebPage {
    static let template = "proceed"
    var lang: String
    var title: String
    var t: HostedWords
    var refreshURL: String
}

/// `signedOut`: signed out, with a link back to the app when it registered one.
struct SignedOutPage: WebPage {
    static let template = "signedOut"
    var lang: String
    var title: String
    var t: HostedWords
    var returnURL: String?
}
