import LatchCore
import LatchModel

/// The console pages that need no engine, only words: sign-in, re-authentication, and the pages that refuse a
/// request or report a failure. (Passkey enrollment reads its ticket's account: ``ConsolePages``.)
public struct ConsoleNotices: Sendable {
    typealias View = ConsoleView
    typealias Section = ConsoleView.Section

    /// The words of the page's language.
    public let w: ConsoleWords

    public init(language: Language) {
        w = ConsoleWords(language)
    }

    /// Why the browser was sent to sign in (the `reason` query parameter).
    public enum SignInReason: String, Sendable {
        case idle, ended, invalid, signedOut = "signed-out"
    }

    public func signIn(reason: SignInReason?) -> ConsoleView {
        var view = View(w(.signIn), area: "")
        switch reason {
        case .idle: view.flash = w(.yourSessionEndedAfter)
        case .ended: view.flash = w(.yourSessionEndedSigned)
        case .invalid: view.flash = w(.yourSessionCouldNot)
        case .signedOut: view.flash = w(.youAreSignedOut)
        case nil: break
        }
        var section = Section("sign-in", intro: w(.signInWithThe))
        section.passkey = View.Passkey(
            mode: "sign-in", label: w(.signInWithA), options: "/console/sign-in/options", finish: "/console/sign-in")
        view.sections = [section]
        return view
    }

    /// The page asking for a passkey check before a dangerous action; `next`: the console path to repeat it from.
    public func reauthentication(_ session: ConsoleSession, next: String) -> ConsoleView {
        var view = View(w(.confirmItIsYou), area: "")
        var section = Section("reauthenticate", intro: w(.thisActionNeedsA))
        section.passkey = View.Passkey(
            mode: "reauth", label: w(.confirmWithAPasskey), options: "/console/reauth/options", finish: "/console/reauth", csrf: session.csrf, next: next)
        view.sections = [section]
        view.status = 401
        return view
    }

    /// Why the console refused a request before running it.
    public enum Refusal: Sendable {
        /// The role may not call the route (the engine's explanation).
        case role(String)
        case formTooLarge, unreadableForm, staleForm
    }

    /// The page of a refused request: what was refused, and the way back to the overview.
    public func refused(_ refusal: Refusal) -> ConsoleView {
        switch refusal {
        case .role(let message): refusalView(status: 403, code: .forbidden, message)
        case .formTooLarge: refusalView(status: 413, code: .requestTooLarge, w(.theFormIsLarger))
        case .unreadableForm: refusalView(status: 400, code: .invalidRequest, w(.theFormCouldNot))
        case .staleForm:
            refusalView(
                status: 403, code: .invalidCSRFToken, w(.thisFormIsStale))
        }
    }

    /// The page of an engine's refusal outside a form (`error`'s message, its code, `status`).
    public func failed(_ error: LatchError, status: Int) -> ConsoleView { refusalView(status: status, code: error.code, error.message) }

    func refusalView(status: Int, code: ErrorCode, _ message: String) -> ConsoleView {
        var view = View(status == 403 ? w(.notAllowed) : w(.couldNotDoThat), area: "")
        view.error = message
        view.errorCode = code.rawValue
        view.status = status
        view.sections = [Section("back")]
        view.sections[0].links = [("back", w(.backToTheOverview), "/console")]
        return view
    }

    /// `view` after an engine refused its form: the error, then that nothing was changed.
    public func refusedForm(_ view: ConsoleView, _ error: LatchError, status: Int) -> ConsoleView {
        var view = view
        view.error = w(.nothingWasChanged, error.message.hasSuffix(".") ? error.message : error.message + ".")
        view.errorCode = error.code.rawValue
        view.status = status
        return view
    }

    /// The page of an unexpected failure (the store did not answer): nothing was changed.
    public func unavailable() -> ConsoleView {
        var view = View(w(.somethingWentWrong), area: "")
        view.error = w(.theServiceIsBriefly)
        view.errorCode = ErrorCode.temporarilyUnavailable.rawValue
        view.status = 503
        return view
    }
}
