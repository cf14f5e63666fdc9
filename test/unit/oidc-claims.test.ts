import { describe, expect, it } from 'vitest';
import { allowedProperties, claimsOf, NO_PROPERTY, propertyFilterFor } from '../../src/oidc/claims.js';

// Identity properties as OpenID Connect claims (docs/oidc.md "Claims").

const ada = {
  FIRST: 'Ada', MIDDLE: 'King', LAST: 'Lovelace', BYEAR: '1815', BMONTH: '12', BDAY: '10', GENDER: 'F',
  EMAIL: 'ada@example.org', PHONE: '+44 20 7946 0000', ADDR: '12 St James\'s Square', ADDR2: 'Flat 1', ZIP: 'SW1Y 4JH',
  AREA: 'St James\'s', CITY: 'London', REGION: 'England', COUNTRY: 'GB', PNR: '18151210-0001', ORGNAME: 'Analytical Engines', HOBBY: 'poetry',
};

describe('OpenID Connect claims from identity properties', () => {
  it('each scope asks the signing app for exactly its properties; openid alone for none', () => {
    expect(propertyFilterFor(['openid'])).toBe(NO_PROPERTY);
    expect(propertyFilterFor(['openid', 'email', 'phone']).split(',')).toEqual(['EMAIL', 'PHONE']);
    expect(propertyFilterFor(['openid', 'unknown-scope', 'email'])).toBe('EMAIL');
  });

  it('maps the standard properties to §5.1 claims, the others under `properties`, leaving out what the scopes do not allow', () => {
    const all = claimsOf(ada, allowedProperties(['openid', 'profile', 'email', 'phone', 'address', 'properties']));
    expect(all).toEqual({
      given_name: 'Ada', middle_name: 'King', family_name: 'Lovelace', name: 'Ada King Lovelace', birthdate: '1815-12-10', gender: 'female',
      email: 'ada@example.org', phone_number: '+44 20 7946 0000',
      address: { street_address: '12 St James\'s Square\nFlat 1', postal_code: 'SW1Y 4JH', locality: 'St James\'s, London', region: 'England', country: 'GB' },
      // HOBBY is no property any scope names: it is never disclosed.
      properties: { PNR: '18151210-0001', ORGNAME: 'Analytical Engines' },
    });
    expect(claimsOf(ada, allowedProperties(['openid', 'email']))).toEqual({ email: 'ada@example.org' });
    expect(claimsOf(ada, allowedProperties(['openid']))).toEqual({});
  });

  it('a birth year alone is a year; empty values are left out; other gender values pass as given', () => {
    expect(claimsOf({ BYEAR: '1815', FIRST: '  ', GENDER: 'X' }, allowedProperties(['profile']))).toEqual({ birthdate: '1815', gender: 'X' });
    expect(claimsOf({ BYEAR: 'soon', BMONTH: '1', BDAY: '2' }, allowedProperties(['profile']))).toEqual({});
  });
});
