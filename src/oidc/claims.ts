/**
 * Identity properties as OpenID Connect claims (docs/oidc.md "Claims"). A scope asks for a set of
 * properties: the signing app discloses exactly those (the QR request's property filter), and the tokens
 * carry them as the standard claims of OpenID Connect Core §5.1 where a property means one, and every
 * other property under the one claim `properties`. Attachments are never claims.
 */

/** The claim that carries the properties no standard claim means, as `{ NAME: value }`. */
export const PROPERTIES_CLAIM = 'properties';

/** Properties each scope discloses (OpenID Connect Core §5.4 for the standard scopes). */
export const SCOPE_PROPERTIES: Readonly<Record<string, readonly string[]>> = {
  openid: [],
  profile: ['FIRST', 'MIDDLE', 'LAST', 'BDAY', 'BMONTH', 'BYEAR', 'GENDER'],
  email: ['EMAIL'],
  phone: ['PHONE'],
  address: ['ADDR', 'ADDR2', 'ZIP', 'AREA', 'CITY', 'REGION', 'COUNTRY'],
  // Everything else a reference identity may hold (the demo's property labels, docs/sdk.md).
  [PROPERTIES_CLAIM]: ['PNR', 'NATIONALITY', 'JID', 'ORGNAME', 'ORGNR', 'ORGDEPT', 'ORGROLE', 'ORGADDR', 'ORGADDR2', 'ORGZIP', 'ORGAREA', 'ORGCITY', 'ORGREGION', 'ORGCOUNTRY'],
};

/** The claims each scope makes available (the provider's `claims` configuration). */
export const SCOPE_CLAIMS: Readonly<Record<string, readonly string[]>> = {
  openid: ['sub'],
  profile: ['name', 'given_name', 'middle_name', 'family_name', 'birthdate', 'gender'],
  email: ['email'],
  phone: ['phone_number'],
  address: ['address'],
  [PROPERTIES_CLAIM]: [PROPERTIES_CLAIM],
};

/** The scopes the provider knows: the standard ones, `properties`, and `offline_access` (refresh tokens). */
export const SUPPORTED_SCOPES = [...Object.keys(SCOPE_PROPERTIES), 'offline_access'];

/**
 * The property filter for the scopes granted (a QR request's `propertyFilter`). `openid` alone discloses
 * no property: the filter then names one no identity has, since an empty filter means "everything".
 */
export function propertyFilterFor(scopes: Iterable<string>): string {
  const names = new Set<string>();
  for (const scope of scopes) for (const name of SCOPE_PROPERTIES[scope] ?? []) names.add(name);
  return names.size === 0 ? NO_PROPERTY : [...names].join(',');
}

/** A property name no identity can hold (names are letters and digits), so a filter of it discloses nothing. */
export const NO_PROPERTY = '-';

const text = (value: string | undefined): string | undefined => (value === undefined || value.trim() === '' ? undefined : value.trim());

/** `BYEAR`, `BMONTH`, `BDAY` as `YYYY-MM-DD` (§5.1 `birthdate`), or `YYYY` when only the year is known. */
function birthdate(p: Readonly<Record<string, string>>): string | undefined {
  const year = text(p.BYEAR);
  if (!year || !/^\d{4}$/.test(year)) return undefined;
  const month = text(p.BMONTH);
  const day = text(p.BDAY);
  if (!month || !day || !/^\d{1,2}$/.test(month) || !/^\d{1,2}$/.test(day)) return year;
  return `${year}-${month.padStart(2, '0')}-${day.padStart(2, '0')}`;
}

/** §5.1 `gender`: "female" and "male" are the defined values; other values pass as given. */
function gender(value: string | undefined): string | undefined {
  const given = text(value);
  if (!given) return undefined;
  const upper = given.toUpperCase();
  return upper === 'F' ? 'female' : upper === 'M' ? 'male' : given;
}

const ADDRESS_FIELDS = new Set(SCOPE_PROPERTIES.address);
const STANDARD = new Set([...SCOPE_PROPERTIES.profile!, ...SCOPE_PROPERTIES.email!, ...SCOPE_PROPERTIES.phone!, ...ADDRESS_FIELDS]);

/**
 * The claims of an identity's properties, limited to `allowed` (the properties the granted scopes disclose).
 * Empty values are left out rather than sent as empty strings.
 */
export function claimsOf(properties: Readonly<Record<string, string>>, allowed: ReadonlySet<string>): Record<string, unknown> {
  const p: Record<string, string> = {};
  for (const [name, value] of Object.entries(properties)) if (allowed.has(name)) p[name] = value;
  const claims: Record<string, unknown> = {};
  const put = (name: string, value: unknown): void => {
    if (value !== undefined) claims[name] = value;
  };
  put('given_name', text(p.FIRST));
  put('middle_name', text(p.MIDDLE));
  put('family_name', text(p.LAST));
  const name = [p.FIRST, p.MIDDLE, p.LAST].map(text).filter((part) => part !== undefined).join(' ');
  put('name', name === '' ? undefined : name);
  put('birthdate', birthdate(p));
  put('gender', gender(p.GENDER));
  put('email', text(p.EMAIL));
  put('phone_number', text(p.PHONE));
  const street = [p.ADDR, p.ADDR2].map(text).filter((part) => part !== undefined).join('\n');
  const address: Record<string, string> = {};
  if (street !== '') address.street_address = street;
  for (const [field, property] of [['postal_code', 'ZIP'], ['locality', 'CITY'], ['region', 'REGION'], ['country', 'COUNTRY']] as const) {
    const value = text(p[property]);
    if (value !== undefined) address[field] = value;
  }
  // AREA (a district within the city) has no field of its own in §5.1.1: it joins the locality.
  const area = text(p.AREA);
  if (area !== undefined) address.locality = address.locality ? `${area}, ${address.locality}` : area;
  if (Object.keys(address).length > 0) claims.address = address;
  const rest = Object.entries(p).filter(([property, value]) => !STANDARD.has(property) && text(value) !== undefined);
  if (rest.length > 0) claims[PROPERTIES_CLAIM] = Object.fromEntries(rest);
  return claims;
}

/** The properties the scopes disclose (the same names `propertyFilterFor` asks the signing app for), for `claimsOf`. */
export function allowedProperties(scopes: Iterable<string>): Set<string> {
  const allowed = new Set<string>();
  for (const scope of scopes) for (const name of SCOPE_PROPERTIES[scope] ?? []) allowed.add(name);
  return allowed;
}
