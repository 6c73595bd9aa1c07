// Team: the members and their roles, pending invitations, inviting by email, and (for owners) requiring
// two-factor for everyone. The server decides who may do what; the page offers the changes to owners.
import { type FormEvent, useState } from 'react';
import { api } from '../api.ts';
import { dateTime, titleCase } from '../format.ts';
import { useAction, useApi, useTitle } from '../hooks.ts';
import type { Session } from '../types.ts';
import {
  ConfirmButton,
  DataTable,
  FormError,
  FormFooter,
  PageHeader,
  ResourceState,
  SelectField,
  Success,
} from '../ui.tsx';

export const ROLES: [string, string][] = [
  ['owner', 'Owner: everything'],
  ['admin', 'Admin: everything except members and payouts'],
  ['developer', 'Developer: API keys, webhooks, read payments and refunds'],
  ['support', 'Support: read everything, refunds'],
  ['viewer', 'Viewer: read only'],
];

interface MemberRow {
  id: number;
  email: string;
  name: string;
  role: string;
  two_factor_enabled: boolean;
  last_login_at: string | null;
}

interface InvitationRow {
  id: number;
  email: string;
  role: string;
  expires_at: string;
}

function InviteForm({ onInvited }: { onInvited: () => void }) {
  const [sent, setSent] = useState<string | null>(null);
  const invite = useAction((email: string, role: string) =>
    api.post('/organization/members/', { email, role }),
  );
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const data = new FormData(form);
    const email = String(data.get('email') ?? '');
    if (await invite.run(email, String(data.get('role') ?? 'viewer'))) {
      form.reset();
      setSent(email);
      onInvited();
    }
  }
  return (
    <form onSubmit={submit} className="card" aria-labelledby="invite-title">
      <h2 id="invite-title">Invite a member</h2>
      <label className="field">
        <span>Email</span>
        <input name="email" type="email" required />
      </label>
      <SelectField label="Role" name="role" choices={ROLES} value="viewer" />
      {sent ? <Success>Invitation sent to {sent}. The link works for 7 days.</Success> : null}
      <FormFooter state={invite} label="Send invitation" pendingLabel="Sending…" />
    </form>
  );
}

function RoleSelect({ member, onChanged }: { member: MemberRow; onChanged: () => void }) {
  const change = useAction((role: string) => api.patch(`/organization/members/${member.id}/`, { role }));
  return (
    <>
      <select
        aria-label={`Role of ${member.email}`}
        value={member.role}
        disabled={change.pending}
        onChange={async (event) => {
          if (await change.run(event.target.value)) onChanged();
        }}
      >
        {ROLES.map(([value]) => (
          <option key={value} value={value}>
            {titleCase(value)}
          </option>
        ))}
      </select>
      <FormError message={change.error} inline />
    </>
  );
}

function RequireTwoFactor() {
  const security = useApi<{ require_two_factor: boolean }>('/organization/security/');
  const save = useAction((value: boolean) =>
    api.put('/organization/security/', { require_two_factor: value }),
  );
  if (!security.data) return <ResourceState resource={security} what="the security settings" />;
  const required = security.data.require_two_factor;
  return (
    <section className="card" aria-labelledby="require-title">
      <h2 id="require-title">Two-factor for everyone</h2>
      <p>
        {required
          ? 'Every member must use two-factor authentication; those without it can only set it up.'
          : 'Members may log in with a password alone.'}
      </p>
      <FormFooter
        state={save}
        label={required ? 'Stop requiring two-factor' : 'Require two-factor for every member'}
        pendingLabel="Saving…"
        onClick={async () => {
          if (await save.run(!required)) security.reload();
        }}
      />
    </section>
  );
}

export function TeamPage({ session }: { session: Session }) {
  useTitle('Team');
  const team = useApi<{ members: MemberRow[]; invitations: InvitationRow[] }>('/organization/members/');
  const owner = session.role === 'owner';
  return (
    <>
      <PageHeader title="Team" />
      <ResourceState resource={team} what="the team" />
      {team.data ? (
        <div className="stack">
          <DataTable label="Members" columns={['Member', 'Role', 'Two-factor', 'Last login', owner && '']}>
            {team.data.members.map((member) => (
              <tr key={member.id}>
                <td>
                  {member.email}
                  {member.name ? <span className="muted"> ({member.name})</span> : null}
                </td>
                <td>
                  {owner ? <RoleSelect member={member} onChanged={team.reload} /> : titleCase(member.role)}
                </td>
                <td>{member.two_factor_enabled ? 'On' : 'Off'}</td>
                <td>{member.last_login_at ? dateTime(member.last_login_at) : 'Never'}</td>
                {owner ? (
                  <td>
                    <ConfirmButton
                      label="Remove"
                      title={`Remove ${member.email}?`}
                      message="They are logged out at once and can no longer log in."
                      confirmLabel="Remove"
                      onConfirm={async () => {
                        await api.delete(`/organization/members/${member.id}/`);
                        team.reload();
                      }}
                    />
                  </td>
                ) : null}
              </tr>
            ))}
          </DataTable>
          {team.data.invitations.length > 0 ? (
            <DataTable label="Pending invitations" columns={['Email', 'Role', 'Expires', owner && '']}>
              {team.data.invitations.map((invitation) => (
                <tr key={invitation.id}>
                  <td>{invitation.email}</td>
                  <td>{titleCase(invitation.role)}</td>
                  <td>{dateTime(invitation.expires_at)}</td>
                  {owner ? (
                    <td>
                      <ConfirmButton
                        label="Revoke"
                        title={`Revoke the invitation of ${invitation.email}?`}
                        message="The link in their mail stops working."
                        confirmLabel="Revoke"
                        onConfirm={async () => {
                          await api.delete(`/organization/invitations/${invitation.id}/`);
                          team.reload();
                        }}
                      />
                    </td>
                  ) : null}
                </tr>
              ))}
            </DataTable>
          ) : null}
          {owner ? (
            <>
              <InviteForm onInvited={team.reload} />
              <RequireTwoFactor />
            </>
          ) : null}
        </div>
      ) : null}
    </>
  );
}
