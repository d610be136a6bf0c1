import LatchCore

/// The hosted pages' words in one language. Every language has every word (a missing one does not compile); the
/// template reads them as `t.<name>`.
struct HostedWords: Sendable {
    var chooserTitle: String
    var chooserIntro: String
    /// What follows the app's name in the chooser's sentence, where the language puts words there.
    var chooserIntroAfter: String?
    var continueWith: String
    var errorTitle: String
    var errorCode: String
    var confirmTitle: String
    var confirmIntro: String
    var signOut: String
    var signedOutTitle: String
    var signedOutIntro: String
    var returnToApp: String
    var proceedTitle: String
    var `continue`: String

    static func of(_ language: Language) -> HostedWords {
        switch language {
        case .english: english
        case .german: german
        }
    }

    static let english = HostedWords(
        chooserTitle: "Choose how to sign in", chooserIntro: "Sign in with your organisation's account to continue to", chooserIntroAfter: nil,
        continueWith: "Continue with", errorTitle: "Sign-in could not continue", errorCode: "Error code:", confirmTitle: "Sign out?",
        confirmIntro: "You are signed in to this service in this browser. Sign out now?", signOut: "Sign out", signedOutTitle: "You are signed out",
        signedOutIntro: "You have been signed out of this service in this browser. You can close this window.", returnToApp: "Return to the app",
        proceedTitle: "Signing you out…", continue: "Continue")

    static let german = HostedWords(
        chooserTitle: "Anmeldung auswählen", chooserIntro: "Melden Sie sich mit dem Konto Ihrer Organisation an, um zu",
        chooserIntroAfter: "zu gelangen", continueWith: "Weiter mit", errorTitle: "Die Anmeldung konnte nicht fortgesetzt werden",
        errorCode: "Fehlercode:", confirmTitle: "Abmelden?", confirmIntro: "Sie sind in diesem Browser bei diesem Dienst angemeldet. Jetzt abmelden?",
        signOut: "Abmelden", signedOutTitle: "Sie sind abgemeldet",
        signedOutIntro: "Sie wurden in diesem Browser von diesem Dienst abgemeldet. Sie können dieses Fenster schließen.",
        returnToApp: "Zurück zur App", proceedTitle: "Sie werden abgemeldet …", continue: "Weiter")
}

extension SignInProblem {
    /// What the error page says about this problem in `language`: safe to show, never internal detail.
    public func message(in language: Language) -> String {
        switch language {
        case .english: english
        case .german: german
        }
    }

    var english: String {
        switch self {
        case .repeatedClientParameters: "The sign-in request repeats client_id or redirect_uri."
        case .missingClientID: "The sign-in request names no app (client_id)."
        case .unknownClient: "The app that sent you here is not known."
        case .unregisteredRedirectURI: "The app asked to come back to an address it has not registered."
        case .requestExpired: "This sign-in has expired. Go back to the app and start again."
        case .identityProviderNotAllowed: "This app does not allow that identity provider."
        case .identityProviderNotConfigured: "This identity provider is no longer configured."
        case .upstreamUnreachable: "The identity provider cannot be reached. Try again in a moment."
        case .stateNotFromHere: "This sign-in has expired or was not started here. Go back to the app and start again."
        case .otherBrowser: "This sign-in was started in another browser. Go back to the app and start again."
        case .answerFromOtherIssuer: "The answer came from another identity provider than the one this sign-in went to."
        case .answerWithoutCode: "The identity provider answered without a code."
        case .answerNotVerified: "The identity provider's answer could not be verified. Nothing was changed."
        case .upstreamTimedOut: "The identity provider did not answer in time. Nothing was changed; try again."
        case .emailDomainRefused: "This account may not sign in to this app (its email domain is not allowed)."
        case .usernameClaimMissing: "The identity provider did not say who you are (the username claim is missing)."
        case .alreadyCompleted: "This sign-in was completed already. Go back to the app."
        case .usernameTaken: "This username is taken by another account of this identity provider."
        case .foreignIDTokenHint: "The sign-out request carries an ID token this service did not issue."
        case .twoApps: "The sign-out request names two different apps."
        case .signOutFormExpired: "This sign-out form has expired. Nothing was changed."
        case .malformedAddress: "The address is malformed or too long."
        case .unreadableForm, .formTooLarge: "The form could not be read."
        case .temporarilyUnavailable: "The service is briefly unavailable. Try again in a moment."
        }
    }

    var german: String {
        switch self {
        case .repeatedClientParameters: "Die Anmeldeanfrage enthält client_id oder redirect_uri mehrfach."
        case .missingClientID: "Die Anmeldeanfrage nennt keine App (client_id)."
        case .unknownClient: "Die App, die Sie hierher geschickt hat, ist nicht bekannt."
        case .unregisteredRedirectURI: "Die App möchte zu einer Adresse zurückkehren, die sie nicht registriert hat."
        case .requestExpired: "Diese Anmeldung ist abgelaufen. Kehren Sie zur App zurück und beginnen Sie neu."
        case .identityProviderNotAllowed: "Diese App erlaubt diesen Identitätsanbieter nicht."
        case .identityProviderNotConfigured: "Dieser Identitätsanbieter ist nicht mehr eingerichtet."
        case .upstreamUnreachable: "Der Identitätsanbieter ist nicht erreichbar. Versuchen Sie es gleich noch einmal."
        case .stateNotFromHere:
            "Diese Anmeldung ist abgelaufen oder wurde nicht hier begonnen. Kehren Sie zur App zurück und beginnen Sie neu."
        case .otherBrowser: "Diese Anmeldung wurde in einem anderen Browser begonnen. Kehren Sie zur App zurück und beginnen Sie neu."
        case .answerFromOtherIssuer: "Die Antwort kam von einem anderen Identitätsanbieter als dem, zu dem diese Anmeldung ging."
        case .answerWithoutCode: "Der Identitätsanbieter hat ohne Code geantwortet."
        case .answerNotVerified: "Die Antwort des Identitätsanbieters konnte nicht geprüft werden. Es wurde nichts geändert."
        case .upstreamTimedOut:
            "Der Identitätsanbieter hat nicht rechtzeitig geantwortet. Es wurde nichts geändert; versuchen Sie es noch einmal."
        case .emailDomainRefused: "Dieses Konto darf sich bei dieser App nicht anmelden (seine E-Mail-Domain ist nicht zugelassen)."
        case .usernameClaimMissing: "Der Identitätsanbieter hat nicht mitgeteilt, wer Sie sind (der Benutzername fehlt)."
        case .alreadyCompleted: "Diese Anmeldung wurde bereits abgeschlossen. Kehren Sie zur App zurück."
        case .usernameTaken: "Dieser Benutzername gehört zu einem anderen Konto dieses Identitätsanbieters."
        case .foreignIDTokenHint: "Die Abmeldeanfrage enthält ein ID-Token, das dieser Dienst nicht ausgestellt hat."
        case .twoApps: "Die Abmeldeanfrage nennt zwei verschiedene Apps."
        case .signOutFormExpired: "Dieses Abmeldeformular ist abgelaufen. Es wurde nichts geändert."
        case .malformedAddress: "Die Adresse ist fehlerhaft oder zu lang."
        case .unreadableForm, .formTooLarge: "Das Formular konnte nicht gelesen werden."
        case .temporarilyUnavailable: "Der Dienst ist kurz nicht verfügbar. Versuchen Sie es gleich noch einmal."
        }
    }
}
