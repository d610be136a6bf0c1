import SwiftUI

/// No account on this device: sign up with a passkey, sign in with a passkey from another device, or register this
/// device with App Attest.
struct WelcomeView: View {
    @EnvironmentObject private var model: LatchAppModel
    @State private var username = ""

    var body: some View {
        Form {
            Section {
                TextField("Username", text: $username)
                    .textContentType(.username)
                    .textInputAutocapitalization(.never)
                    .autocorrectionDisabled()
                Button("Sign up with a passkey") {
                    Task { await model.signUpWithPasskey(username: username) }
                }
            } header: {
                Text("New account")
            } footer: {
                Text("Your phone creates a passkey for this account. iCloud Keychain keeps it on your other devices.")
            }

            Section {
                Button("Sign in with a passkey") {
                    Task { await model.signInWithExistingPasskey() }
                }
            } header: {
                Text("Already have an account?")
            } footer: {
                Text("Choose a passkey you made before, on this phone or another one.")
            }

            if model.deviceKeySupported {
                Section {
                    Button("Register this device") {
                        Task { await model.registerThisDevice() }
                    }
                } header: {
                    Text("Without a username")
                } footer: {
                    Text("Apple certifies a key in this phone's Secure Enclave (App Attest). The account works on this phone only.")
                }
            }
        }
    }
}
