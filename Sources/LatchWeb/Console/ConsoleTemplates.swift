/// The console's templates, stylesheet and script. One page template renders every page from a `ConsolePage`:
/// sections of facts, tables with row actions, forms, a secret shown once, an image. Every value is escaped by the
/// template engine; nothing is inline (the CSP allows the console's own script and stylesheet only).
public enum ConsoleTemplates {
    /// Template name to Mustache text: `page` and its partials.
    public static let sources: [String: String] = [
        "page": """
            <!doctype html>
            <html lang="{{lang}}">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="referrer" content="same-origin">
            <title>{{title}} · {{t.console}}</title>
            <link rel="stylesheet" href="/console/assets/console.css">
            <script src="/console/assets/console.js" defer></script>
            </head>
            <body>
            <header>
            <a class="brand" href="/console">{{t.console}}</a>
            {{#username}}
            <nav aria-label="{{t.navigation}}">
            {{#nav}}<a href="{{href}}" id="nav-{{id}}"{{#current}} aria-current="page"{{/current}}>{{label}}</a>{{/nav}}
            </nav>
            <form method="post" action="/console/sign-out" class="whoami">
            <span id="whoami">{{username}} <small>({{role}})</small></span>
            <input type="hidden" name="csrf" value="{{csrf}}">
            <button type="submit" id="sign-out" class="link">{{t.signOut}}</button>
            </form>
            {{/username}}
            </header>
            <main>
            <h1 id="title">{{title}}</h1>
            {{#flash}}<p class="flash" role="status" id="flash">{{flash}}</p>{{/flash}}
            {{#error}}<p class="error" role="alert" id="error">{{error}}{{#errorCode}} <code id="error-code">{{errorCode}}</code>{{/errorCode}}</p>{{/error}}
            {{#sections}}{{> section}}{{/sections}}
            </main>
            </body>
            </html>
            """,
        "section": """
            <section id="{{id}}">
            {{#heading}}<h2>{{heading}}</h2>{{/heading}}
            {{#intro}}<p>{{intro}}</p>{{/intro}}
            {{#hasFacts}}<dl>{{#facts}}<dt>{{label}}</dt><dd id="{{id}}">{{#code}}<code>{{value}}</code>{{/code}}{{^code}}{{value}}{{/code}}</dd>{{/facts}}</dl>{{/hasFacts}}
            {{#secret}}
            <div class="secret">
            <p><strong>{{label}}</strong> — {{t.shownOnce}}</p>
            <pre id="{{id}}">{{value}}</pre>
            {{#download}}<a class="button" id="{{id}}-download" download="{{filename}}" href="{{href}}">{{t.download}} {{filename}}</a>{{/download}}
            </div>
            {{/secret}}
            {{#image}}<figure><img id="{{id}}" src="{{src}}" alt="{{alt}}" width="{{size}}" height="{{size}}"><figcaption>{{alt}}</figcaption></figure>{{/image}}
            {{#table}}
            {{#hasRows}}
            <table id="{{id}}">
            <thead><tr>{{#columns}}<th scope="col">{{.}}</th>{{/columns}}{{#hasActions}}<th scope="col"><span class="visually-hidden">{{t.actions}}</span></th>{{/hasActions}}</tr></thead>
            <tbody>
            {{#rows}}
            <tr id="{{id}}">{{#cells}}<td>{{#href}}<a href="{{href}}">{{text}}</a>{{/href}}{{^href}}{{#code}}<code>{{text}}</code>{{/code}}{{^code}}{{text}}{{/code}}{{/href}}</td>{{/cells}}{{#hasActions}}<td class="actions">{{#actions}}{{> action}}{{/actions}}</td>{{/hasActions}}</tr>
            {{/rows}}
            </tbody>
            </table>
            {{/hasRows}}
            {{^hasRows}}<p class="empty" id="{{id}}-empty">{{empty}}</p>{{/hasRows}}
            {{/table}}
            {{#forms}}{{> form}}{{/forms}}
            {{#links}}<p><a class="button" href="{{href}}" id="{{id}}">{{label}}</a></p>{{/links}}
            {{#passkey}}
            <p><button type="button" id="passkey" data-passkey="{{mode}}" data-options="{{options}}" data-finish="{{finish}}"{{#ticket}} data-ticket="{{ticket}}"{{/ticket}}{{#csrf}} data-csrf="{{csrf}}"{{/csrf}}{{#next}} data-next="{{next}}"{{/next}} data-failed="{{t.passkeyFailed}}">{{label}}</button></p>
            <p class="error" role="alert" id="passkey-error" hidden></p>
            <noscript><p class="error">{{t.needsScript}}</p></noscript>
            {{/passkey}}
            </section>
            """,
        "action": """
            <form method="post" action="{{action}}" class="inline">
            <input type="hidden" name="csrf" value="{{csrf}}">
            {{#fields}}<input type="hidden" name="{{name}}" value="{{value}}">{{/fields}}
            <button type="submit" id="{{id}}"{{#danger}} class="danger"{{/danger}}>{{label}}</button>
            </form>
            """,
        "form": """
            <form method="{{method}}" action="{{action}}" id="{{id}}" class="stacked">
            {{#post}}<input type="hidden" name="csrf" value="{{csrf}}">{{/post}}
            {{#fields}}
            {{#hidden}}<input type="hidden" name="{{name}}" value="{{value}}">{{/hidden}}
            {{^hidden}}
            <label for="{{id}}">{{label}}</label>
            {{#select}}<select id="{{id}}" name="{{name}}">{{#options}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/options}}</select>{{/select}}
            {{#textarea}}<textarea id="{{id}}" name="{{name}}" rows="3" maxlength="{{maxLength}}">{{value}}</textarea>{{/textarea}}
            {{#checkbox}}<input type="checkbox" id="{{id}}" name="{{name}}" value="true"{{#checked}} checked{{/checked}}>{{/checkbox}}
            {{#text}}<input type="{{inputType}}" id="{{id}}" name="{{name}}" value="{{value}}" maxlength="{{maxLength}}"{{#placeholder}} placeholder="{{placeholder}}"{{/placeholder}}{{#required}} required{{/required}}>{{/text}}
            {{#hint}}<small>{{hint}}</small>{{/hint}}
            {{/hidden}}
            {{/fields}}
            <button type="submit" id="{{id}}-submit"{{#danger}} class="danger"{{/danger}}>{{submit}}</button>
            </form>
            """,
    ]

    /// `/console/assets/console.css`.
    public static let stylesheet = """
        :root { color-scheme: light dark; --accent: #2451b7; --danger: #b42318; --fg: #1b1f24; --bg: #f6f7f9; --card: #fff; --muted: #57606a; --line: #d0d7de; }
        @media (prefers-color-scheme: dark) { :root { --accent: #8fb0ff; --danger: #ff8a80; --fg: #e6e8eb; --bg: #111418; --card: #1b2027; --muted: #a4adb8; --line: #30363d; } }
        * { box-sizing: border-box; }
        body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
        header { display: flex; flex-wrap: wrap; gap: .5rem 1.25rem; align-items: center; padding: .75rem 1.5rem; background: var(--card); border-bottom: 1px solid var(--line); }
        header nav { display: flex; flex-wrap: wrap; gap: .25rem .9rem; flex: 1; }
        header a { color: var(--fg); text-decoration: none; }
        header a[aria-current] { color: var(--accent); font-weight: 600; border-bottom: 2px solid var(--accent); }
        .brand { font-weight: 700; }
        .whoami { display: flex; gap: .5rem; align-items: center; margin: 0; }
        main { max-width: 72rem; margin: 1.5rem auto; padding: 0 1.5rem; }
        h1 { font-size: 1.5rem; margin: 0 0 1rem; }
        h2 { font-size: 1.1rem; margin: 0 0 .75rem; }
        section { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 1rem 1.25rem; margin: 0 0 1rem; overflow-x: auto; }
        table { border-collapse: collapse; width: 100%; }
        th, td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; word-break: break-word; }
        th { color: var(--muted); font-weight: 600; font-size: .85rem; }
        dl { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; margin: 0 0 .75rem; }
        dt { color: var(--muted); }
        dd { margin: 0; word-break: break-word; }
        form.stacked { display: grid; gap: .35rem; max-width: 32rem; margin-top: .75rem; }
        form.inline { display: inline; }
        input, select, textarea { font: inherit; padding: .4rem .5rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); }
        button, a.button { font: inherit; padding: .4rem .9rem; border: 1px solid var(--accent); border-radius: 6px; color: var(--accent); background: transparent; cursor: pointer; text-decoration: none; display: inline-block; }
        button:hover, a.button:hover { background: var(--accent); color: var(--card); }
        button.danger { border-color: var(--danger); color: var(--danger); }
        button.danger:hover { background: var(--danger); color: var(--card); }
        button.link { border: none; padding: 0; color: var(--accent); }
        a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
        .flash { padding: .6rem .9rem; border-left: 4px solid var(--accent); background: var(--card); }
        .error { padding: .6rem .9rem; border-left: 4px solid var(--danger); background: var(--card); color: var(--danger); }
        .secret pre { white-space: pre-wrap; word-break: break-all; padding: .75rem; background: var(--bg); border: 1px dashed var(--line); border-radius: 6px; }
        .empty, small { color: var(--muted); }
        #audit-table { font-size: .82rem; }
        #audit-table td { word-break: normal; overflow-wrap: anywhere; }
        /* Numbers, times, kinds and addresses never break mid-word: the section scrolls sideways instead. */
        #audit-table td:nth-child(1), #audit-table td:nth-child(2), #audit-table td:nth-child(3), #audit-table td:nth-child(8) { white-space: nowrap; overflow-wrap: normal; }
        .visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
        img { image-rendering: pixelated; background: #fff; padding: 8px; }
        @media (max-width: 40rem) { main { padding: 0 .5rem; } section { padding: .75rem; } }
        """

    /// `/console/assets/console.js`: passkey ceremonies (WebAuthn needs script). The pages work without it
    /// otherwise.
    public static let script = """
        "use strict";
        (() => {
          const toBytes = (text) => {
            const base64 = text.replace(/-/g, "+").replace(/_/g, "/");
            const padded = base64 + "===".slice((base64.length + 3) % 4);
            return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
          };
          const toText = (buffer) => {
            let binary = "";
            for (const byte of new Uint8Array(buffer)) binary += String.fromCharCode(byte);
            return btoa(binary).replace(/\\+/g, "-").replace(/\\//g, "_").replace(/=+$/, "");
          };
          const post = async (url, body, csrf) => {
            const headers = { "Content-Type": "application/json" };
            if (csrf) headers["X-CSRF-Token"] = csrf;
            const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(body), credentials: "same-origin" });
            const json = await response.json().catch(() => ({}));
            if (!response.ok) throw new Error((json.error_description || json.message || "refused") + (json.error ? " (" + json.error + ")" : ""));
            return json;
          };
          const creation = (options) => {
            const o = options.publicKey;
            return { ...o, challenge: toBytes(o.challenge), user: { ...o.user, id: toBytes(o.user.id) },
              excludeCredentials: (o.excludeCredentials || []).map((c) => ({ ...c, id: toBytes(c.id) })) };
          };
          const request = (options) => {
            const o = options.publicKey;
            return { ...o, challenge: toBytes(o.challenge), allowCredentials: (o.allowCredentials || []).map((c) => ({ ...c, id: toBytes(c.id) })) };
          };
          const registration = (credential) => ({ id: credential.id, rawId: toText(credential.rawId), type: credential.type,
            clientExtensionResults: {}, response: { clientDataJSON: toText(credential.response.clientDataJSON),
              attestationObject: toText(credential.response.attestationObject) } });
          const assertion = (credential) => ({ id: credential.id, rawId: toText(credential.rawId), type: credential.type,
            response: { clientDataJSON: toText(credential.response.clientDataJSON), authenticatorData: toText(credential.response.authenticatorData),
              signature: toText(credential.response.signature),
              userHandle: credential.response.userHandle ? toText(credential.response.userHandle) : null } });
          const run = async (button) => {
            const error = document.getElementById("passkey-error");
            error.hidden = true;
            button.disabled = true;
            try {
              const mode = button.dataset.passkey;
              const ticket = button.dataset.ticket;
              const csrf = button.dataset.csrf;
              const options = await post(button.dataset.options, ticket ? { ticket } : {}, csrf);
              let body;
              if (mode === "enroll") {
                const credential = await navigator.credentials.create({ publicKey: creation(options) });
                body = { ticket, ceremonyId: options.ceremonyId, credential: registration(credential) };
              } else {
                const credential = await navigator.credentials.get({ publicKey: request(options) });
                body = { ceremonyId: options.ceremonyId, credential: assertion(credential) };
              }
              if (button.dataset.next) body.next = button.dataset.next;
              const done = await post(button.dataset.finish, body, csrf);
              window.location.assign(done.redirect || "/console");
            } catch (failure) {
              error.textContent = (button.dataset.failed || "The passkey could not be used:") + " " + failure.message;
              error.hidden = false;
              button.disabled = false;
            }
          };
          document.addEventListener("DOMContentLoaded", () => {
            for (const button of document.querySelectorAll("button[data-passkey]")) button.addEventListener("click", () => run(button));
          });
        })();
        """
}
