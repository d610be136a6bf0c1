import SwiftUI

/// An account exists on this device, with no live session: sign in again with the same kind of credential.
struct SignedOutView: View {
    @EnvironmentObject private var model: LatchAppModel
    let username: String
    let method: LatchAppModel.SignInMethod
    @State private var confirmingRemoval = false

    var body: some View {
        Form {
            Section {
                LabeledContent("Username", value: username.isEmpty ? "—" : username)
                LabeledContent("Signs in with", value: method == .passkey ? "a passkey" : "this device's key")
            } header: {
                Text("Signed out")
            }

            Section {
                Button(method == .passkey ? "Sign in with your passkey" : "Sign in with the device key") {
                    Task { await model.signIn() }
                }
            }

            Section {
                Button("Remove the account from this device", role: .destructive) {
                    confirmingRemoval = true
                }
            } footer: {
                Text("The account stays on the server. A passkey still signs you in; a device key cannot be used again.")
            }
        }
        .confirmationDialog("Remove the account from this device?", isPresented: $confirmingRemoval, titleVisibility: .visible) {
            Button("Remove", role: .destructive) {
                Task { await model.forgetThisDevice() }
            }
        }
    }
}
